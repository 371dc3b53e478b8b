// Money arithmetic and the wallet document. Wallets hold integer micro-cents (µ¢, 1 cent = 10^6 µ¢);
// a call's exact cost may carry a fraction of a micro-cent, which is charged rounded up and the
// excess kept as a credit in pico-cents (p¢, 1 µ¢ = 10^6 p¢) on the wallet, folded back into the
// balance 1,000 µ¢ at a time. So a wallet's value, balance + held + carry, is exact to 10^-12 cent
// per call, whatever the number of calls.
export const MICROCENTS_PER_CENT = 1_000_000;
export const PICOCENTS_PER_MICROCENT = 1_000_000;
/** The carry is folded into the balance once it reaches this many pico-cents (1,000 µ¢ = 0.001 cent). */
export const CARRY_FOLD_PC = 1_000_000_000;

/**
 * The most a wallet may hold, µ¢ (balance + held): 9 × 10^15 µ¢ = 9,000,000,000 cents, below 2^53
 * (≈ 9.007 × 10^15) by more than any carry can fold in, so every balance, hold and debit stays an
 * exact integer in a JavaScript number and a MongoDB double. A credit past it is refused.
 */
export const WALLET_LIMIT_UC = 9_000_000_000_000_000;
export const WALLET_LIMIT_CENTS = WALLET_LIMIT_UC / 1_000_000;

export type OwnerType = 'user' | 'org';

/** A hold in flight (stored in its wallet's `holds` list as one string, see holdToken). */
export interface StoredHold {
  id: string;
  /** Amount reserved, µ¢. */
  a: number;
  /** Expiry, epoch ms. */
  x: number;
  /** The request it covers (to trace a stuck hold). */
  r: string;
  /** The billing instance that took it (instances.ts), so it is returned once that one is dead; absent in older holds. */
  o?: string;
}

/**
 * `<id> <µ¢> <expiry ms> <request id> <owner tag>`: a string rather than an object, because msgpack
 * (the embedded store's encoding) writes a list of objects several times slower than a list of
 * strings, and a busy wallet rewrites its list on every hold and settle. Ids never contain spaces.
 */
export const holdToken = (h: StoredHold): string => `${h.id} ${h.a} ${h.x} ${h.r}${h.o === undefined ? '' : ` ${h.o}`}`;

export function parseHold(token: string): StoredHold | null {
  const [id, a, x, r, o] = token.split(' ');
  const hold: StoredHold = { id: id ?? '', a: Number(a), x: Number(x), r: r ?? '' };
  if (o) hold.o = o;
  return hold.id && Number.isSafeInteger(hold.a) && Number.isSafeInteger(hold.x) ? hold : null;
}

export interface WalletDoc {
  _id: string; // 'user:<id>' | 'org:<id>'
  owner_type: OwnerType;
  owner_id: number;
  /** Spendable micro-cents: an integer, never negative (every debit is conditional on it). */
  balance_uc: number;
  /** Micro-cents reserved by the holds in flight: always the sum of `holds` (one write changes both). */
  held_uc: number;
  /** The holds in flight, as holdToken strings; see billing/wallets.ts. */
  holds?: string[];
  /**
   * The usage records of the calls settled on this wallet and not yet in `usage_records`, each
   * written by the settle's own write (usage-entry.ts strings; see billing/usage.ts).
   */
  usage_outbox?: string[];
  /** Set while `usage_outbox` may hold records (indexed, sparse: how recovery finds them). */
  usage_pending?: true;
  /** Pico-cents charged above exact costs by rounding up, owed back to the wallet. */
  carry_pc?: number;
  low_balance_threshold_cents?: number;
  /** The last top-ups credited (bounded), so re-applying a top-up after a crash never credits twice. */
  applied_topups?: string[];
  created_at: Date;
  closed_at?: Date;
  [k: string]: unknown;
}

export const walletIdOf = (type: OwnerType, id: number): string => `${type}:${id}`;

/** The spec's event field naming the account: `user_id` or `org_id`. */
export const ownerField = (type: OwnerType, id: number): Record<string, number> => (type === 'user' ? { user_id: id } : { org_id: id });

/** The fields a new wallet starts with (for `$setOnInsert`). */
export function walletSeed(ownerType: OwnerType, ownerId: number, createdAt: Date) {
  return { owner_type: ownerType, owner_id: ownerId, balance_uc: 0, held_uc: 0, created_at: createdAt };
}

/** What the wallet holds in µ¢, holds in flight included (the carry's whole micro-cents too). */
export function walletTotalUc(w: Pick<WalletDoc, 'balance_uc' | 'held_uc' | 'carry_pc'> | null | undefined): number {
  if (!w) return 0;
  return (w.balance_uc ?? 0) + (w.held_uc ?? 0) + Math.floor((w.carry_pc ?? 0) / PICOCENTS_PER_MICROCENT);
}

export const floorCents = (uc: number): number => Math.floor(uc / MICROCENTS_PER_CENT);

/**
 * The charge for an exact cost: whole micro-cents rounded up, and the excess in pico-cents that is
 * credited back as carry. Computed without ever forming cost × 10^6 (which could pass 2^53).
 */
export function chargeFor(costUc: number): { chargeUc: number; carryPc: number } {
  if (!Number.isFinite(costUc) || costUc < 0) throw new RangeError(`a cost must be a finite, non-negative number of micro-cents, got ${costUc}`);
  let whole = Math.floor(costUc);
  let frac = Math.round((costUc - whole) * PICOCENTS_PER_MICROCENT);
  if (frac >= PICOCENTS_PER_MICROCENT) {
    whole += 1;
    frac = 0;
  }
  return frac === 0 ? { chargeUc: whole, carryPc: 0 } : { chargeUc: whole + 1, carryPc: PICOCENTS_PER_MICROCENT - frac };
}

/** `YYYY-MM-DD` of an epoch-ms instant, in UTC. */
export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

/** `months` calendar months after `anchor` (UTC), clamped to the month's last day: Jan 31 + 1 → Feb 28/29. */
export function addMonths(anchor: Date, months: number): Date {
  const y = anchor.getUTCFullYear();
  const m = anchor.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(y, m + 1, 0)).getUTCDate();
  const d = new Date(anchor.getTime());
  d.setUTCFullYear(y, m, Math.min(anchor.getUTCDate(), lastDay));
  return d;
}
