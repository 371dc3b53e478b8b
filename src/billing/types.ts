// The metering boundary the /v1 routes call. Money is kept in integer micro-cents (1 cent =
// 1,000,000 µ¢) so fractions of a cent are carried, never lost or invented; the API shows whole
// cents (floor). Every call: limits → hold an estimate → upstream → settle the exact cost (or
// release) → usage record.
import type { ApiKeyPrincipal } from '../services/keys.ts';

export const MICROCENTS_PER_CENT = 1_000_000;

/** Who pays for a call: the organization wallet while the key's owner is a member, else theirs. */
export interface Payer {
  walletId: string; // 'user:<id>' | 'org:<id>'
  ownerType: 'user' | 'org';
  ownerId: number;
  userId: number;
  keyId: number;
  keyPrefix: string;
  kycVerified: boolean;
}

export interface Hold {
  id: string;
  walletId: string;
  amountMicrocents: number;
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
  costMicrocents: number;
  status: 'ok' | 'error' | 'client_closed' | 'upstream_failed';
  latencyMs: number;
}

export interface Billing {
  payerFor(principal: ApiKeyPrincipal): Promise<Payer>;
  /**
   * Per-key limits before the call: counts the request in the key's RPM window and checks TPD.
   * Throws ApiError rate_limit_exceeded with the spec's bare `{detail}` body and headers, and
   * emits rate_limit_exceeded (coalesced per key, limit and window).
   */
  admit(principal: ApiKeyPrincipal): Promise<void>;
  /** Reserves an estimate; throws ApiError insufficient_credit (402) when the wallet cannot cover it. */
  hold(payer: Payer, microcents: number, requestId: string): Promise<Hold>;
  /**
   * Debits the exact cost (capped at the hold: an absurd upstream usage never overspends), returns
   * the rest of the hold, adds the tokens to the key's TPD counter and records usage. Exactly once
   * per hold (a second settle or release is a no-op).
   */
  settle(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void>;
  /** Returns the whole hold (nothing was delivered) and records usage with cost 0. */
  release(hold: Hold, payer: Payer, facts: UsageFacts): Promise<void>;
}
