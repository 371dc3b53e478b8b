// The metering boundary the /v1 routes call (implemented by src/billing/service.ts, which also
// exports assertKyc). Money is kept in integer micro-cents (1 cent = 1,000,000 µ¢) plus a sub-µ¢
// carry, so fractions of a cent are carried, never lost or invented; the API shows whole cents
// (floor). Every call: limits → hold an estimate (and reserve it in the key's limit windows) →
// upstream → settle the exact cost (or release) → usage record.
import type { ApiKeyPrincipal } from '../identity/keys.ts';

/** Who pays for a call: the organization wallet while the key's owner is a member, else theirs. */
export interface Payer {
  walletId: string; // 'user:<id>' | 'org:<id>'
  ownerType: 'user' | 'org';
  ownerId: number;
  userId: number;
  keyId: number;
  keyPrefix: string;
  kycVerified: boolean;
  /**
   * The key's token and spend limits, when it has any (billing/limits.ts): its calls' holds reserve
   * their most in those windows. Absent for a key without them (and in payers saved before them).
   */
  caps?: Pick<ApiKeyPrincipal, 'tpd' | 'cpd' | 'cpm'>;
}

/**
 * What a call holds in its key's limit windows (billing/limits.ts `reserve`), taken with its hold in
 * the windows of the hold's instant (`Hold.at`); its usage record settles the difference there.
 */
export interface Reservation {
  keyId: number;
  /** Tokens held in the key's daily token window (0: the key has no TPD limit). */
  tokens: number;
  /** µ¢ held in the key's daily and monthly spend windows (0: it has neither cap). */
  uc: number;
}

export interface HoldOptions {
  /**
   * How long the hold lives before the sweep returns it (default `billing.holdTtlSeconds`): a job
   * that waits on a provider for hours holds its estimate that long.
   */
  ttlMs?: number;
  /**
   * Held for an actor (a job), not for a request: it outlives the process that took it (the actor
   * resumes elsewhere and settles it), so it is not returned when that process dies, only by its TTL.
   */
  custodial?: boolean;
  /**
   * A hold named by its taker (with `expiresAt`): taking it again is a no-op that answers the same
   * hold, so a step replayed after a crash never holds twice. Default: a fresh id.
   */
  id?: string;
  /** With `id`: when the hold expires (epoch ms), instead of now plus its TTL. */
  expiresAt?: number;
  /**
   * The most tokens the call may use (its prompt's bound plus its output cap), reserved in its
   * key's daily token window when the key has a TPD limit. Default 0 (a call billed otherwise).
   */
  tokens?: number;
}

export interface Hold {
  /** The hold's entry in its wallet's `holds` list (see holdToken in money.ts). */
  id: string;
  walletId: string;
  amountMicrocents: number;
  /**
   * When it was taken (epoch ms): the call counts in its key's limit windows of this instant,
   * whenever it ends. Absent on holds saved before it (they count at their settle's instant).
   */
  at?: number;
  /** What it reserved in its key's limit windows, when the key has token or spend limits. */
  reserved?: Reservation;
}

/** What a usage record says about one request (the billing service adds ids, time and payer). */
export interface UsageFacts {
  requestId: string;
  model: string;
  modelType: string;
  /** The route that served it, `${modelId}#${index}`, or null when none did. */
  route: string | null;
  promptTokens?: number;
  completionTokens?: number;
  seconds?: number;
  characters?: number;
  calls?: number;
  /**
   * The exact cost in µ¢. A fraction of a µ¢ may (and should) be passed unrounded: billing charges
   * whole µ¢ rounded up and credits the excess back to the wallet, so nothing is lost or invented
   * over any number of calls. A cost above the hold is capped at the hold.
   */
  costMicrocents: number;
  status: 'ok' | 'error' | 'client_closed' | 'upstream_failed' | 'rejected';
  latencyMs: number;
  /** Of promptTokens, how many the upstream read from its prompt cache (priced apart), when it said. */
  cachedTokens?: number;
  /** The client's own end-user id for the call (OpenAI's `safety_identifier`, else `user`), as sent. */
  endUser?: string;
}

export interface Billing {
  payerFor(principal: ApiKeyPrincipal): Promise<Payer>;
  /**
   * Per-key limits before the call: counts the request in the key's RPM window and checks TPD.
   * Throws ApiError rate_limit_exceeded with the spec's bare `{detail}` body and headers, and
   * emits rate_limit_exceeded (coalesced per key, limit and window). Admitted, resolves to the
   * key's standing as x-ratelimit-* response headers, or null for a key without limits.
   */
  admit(principal: ApiKeyPrincipal): Promise<Record<string, string> | null>;
  /**
   * Reserves an estimate (rounded up to whole µ¢, at least 1 µ¢, so an empty wallet is refused even
   * for a free call); throws ApiError insufficient_credit (402) when the spendable balance cannot
   * cover it, or rate_limit_exceeded (429, bare) when the key's TPD, CPD or CPM window cannot (see
   * limits.ts `reserve`; the window is reserved first, and given back when the wallet refuses). The hold lives `billing.holdTtlSeconds`; one not settled by then is returned by the sweep.
   */
  hold(payer: Payer, microcents: number, requestId: string, opts?: HoldOptions): Promise<Hold>;
  /**
   * Debits the exact cost (capped at the hold: an absurd upstream usage never overspends), returns
   * the rest of the hold and records usage; the record adds promptTokens + completionTokens to the
   * key's TPD counter and the cost to its spend counters (less what the hold reserved there), in the
   * windows of the hold's instant. Exactly once per hold id, on any instance: a second settle or release is a no-op. A call
   * that outlived its hold (swept) is still charged once, as far as the spendable balance goes.
   */
  settle(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void>;
  /**
   * settle() for a call whose answer is ready; resolves when the answer may be sent. With lazy
   * wallet writes (the default) that is at once: the debit is issued (so any later read of the
   * wallet shows it), a failure is reported rather than thrown (the hold is then returned by the
   * sweep), and close() waits for it. With `billing.durableWalletWrites` it is once the debit is on
   * disk, as for settle() (holds are lazy either way).
   */
  settleForAnswer(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void>;
  /** Returns the whole hold (nothing was delivered) and records usage with cost 0. */
  release(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void>;
  /**
   * Returns the whole hold (and its reservation) with no usage record: it was replaced by a larger
   * one for the same call, which is settled or released in its place. A no-op when the hold is
   * already finished.
   */
  drop(hold: Hold): Promise<void>;
}
