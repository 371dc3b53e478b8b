// Per-key limits, counted in the store so that every instance enforces one limit:
// - rpm: a fixed 60-second window (`rpm:<key id>`), one atomic `$inc` per request, in the minute
//   the request arrives (a call is counted once, however long it runs);
// - tpd: prompt plus completion tokens per UTC day (`tpd:<key id>`);
// - cpd / cpm: spend in cents per UTC day / UTC calendar month (`cpd:<key id>`, `cpm:<key id>`,
//   counted in µ¢).
// tpd, cpd and cpm are read at admission (a window already full refuses the request), and a call on
// a key with such a limit reserves the most it may use when it takes its hold (`reserve`): its
// prompt's bound plus its output cap in tokens, its hold in µ¢, added to the windows of that
// instant only if they stay within the limits, so calls in flight together never pass one. Its usage
// record then settles the difference (used − reserved) into those same windows, not the ones
// current when it ends (billing/usage.ts `counters`), so a call that runs across midnight UTC or the
// 1st of a month counts once, in the window it was admitted in.
// A breach is a 429 with the spec's bare `{detail}` body and headers, and one rate_limit_exceeded
// event per key, limit and window: a marker document decides which instance emits it.
import { ApiError } from '../errors.ts';
import type { Clock, WindowCounters, WindowPeriod } from '../shared/common.ts';
import type { AccountEvent, EventSink } from '../shared/events.ts';
import type { ApiKeyPrincipal, LimitName } from '../identity/keys.ts';
import { isDuplicateKeyError, type Store } from '../store/port.ts';
import { MICROCENTS_PER_CENT } from './money.ts';
import type { Payer, Reservation } from './types.ts';

const MINUTE = 60;
const DAY = 86_400;
/** Windows whose event this instance knows was emitted, so a flood of 429s costs no write each. */
const EMITTED_CACHE = 10_000;

export type LimitType = LimitName;

/** The key a limit belongs to, as an event about it names it. */
type KeyRef = Pick<ApiKeyPrincipal, 'keyId' | 'prefix' | 'userId'>;

/**
 * The limits counted per window from settled usage (fed by the usage flush, read before a call):
 * counters `<type>:<key id>`, in tokens for tpd and in µ¢ for the spend caps, whose limits are
 * cents (`scale` µ¢ per unit of the limit).
 */
export const WINDOW_CAPS = [
  {
    type: 'tpd',
    period: DAY,
    fed: 'tokens',
    scale: 1,
    refused: (limit: number, used: string) =>
      `This API key's daily limit of ${limit} tokens was exceeded (${used} used today); the daily limit resets at midnight UTC.`,
    short: (limit: number, left: string, most: string) =>
      `This API key's daily limit of ${limit} tokens has ${left} left today (calls in flight counted at the most they may use) and this call may use up to ${most} (its prompt and max_tokens); lower max_tokens, or retry later: the daily limit resets at midnight UTC.`,
  },
  {
    type: 'cpd',
    period: DAY,
    fed: 'spend',
    scale: MICROCENTS_PER_CENT,
    refused: (limit: number, used: string) =>
      `This API key's daily spend limit of ${limit} cents was reached (${used} spent today); it resets at midnight UTC.`,
    short: (limit: number, left: string, most: string) =>
      `This API key's daily spend limit of ${limit} cents has ${left} left today (calls in flight counted at the most they may cost) and this call may cost up to ${most}; it resets at midnight UTC.`,
  },
  {
    type: 'cpm',
    period: 'month',
    fed: 'spend',
    scale: MICROCENTS_PER_CENT,
    refused: (limit: number, used: string) =>
      `This API key's monthly spend limit of ${limit} cents was reached (${used} spent this month); it resets on the 1st at 00:00 UTC.`,
    short: (limit: number, left: string, most: string) =>
      `This API key's monthly spend limit of ${limit} cents has ${left} left this month (calls in flight counted at the most they may cost) and this call may cost up to ${most}; it resets on the 1st at 00:00 UTC.`,
  },
] as const satisfies readonly {
  type: LimitType;
  period: WindowPeriod;
  fed: 'tokens' | 'spend';
  scale: number;
  refused: (limit: number, used: string) => string;
  /** A reservation's refusal: the window has `left` and the call may take up to `most` (the limit's units). */
  short: (limit: number, left: string, most: string) => string;
}[];

/** What a usage record (billing/usage.ts) says that the limit windows count. */
interface SettledCall {
  ts: Date;
  key_id?: number;
  prompt_tokens?: number;
  completion_tokens?: number;
  cost_uc: number;
  held_at?: number;
  reserved_tokens?: number;
  reserved_uc?: number;
}

/**
 * What settled calls add to their keys' windows (the usage flush writes them, billing/usage.ts):
 * every key is counted, so a cap set during its window counts the window's usage so far; in the
 * windows of the call's hold (else of its record's time), by what it used less what its hold
 * reserved there (`reserve`: negative when it used less, the rest given back). Summed per window.
 */
export function settledCounts(
  records: readonly SettledCall[],
  windowStart: (period: WindowPeriod, at: number) => number,
): { key: string; period: WindowPeriod; at: number; n: number }[] {
  const sums = new Map<string, { key: string; period: WindowPeriod; at: number; n: number }>();
  for (const r of records) {
    if (r.key_id === undefined || r.key_id === 0) continue; // 0: a call from the dashboard, which no key made
    const fed = {
      tokens: (r.prompt_tokens ?? 0) + (r.completion_tokens ?? 0) - (r.reserved_tokens ?? 0),
      spend: r.cost_uc - (r.reserved_uc ?? 0),
    };
    const when = r.held_at ?? r.ts.getTime();
    for (const cap of WINDOW_CAPS) {
      const n = fed[cap.fed];
      if (n === 0) continue;
      const key = `${cap.type}:${r.key_id}`;
      const at = windowStart(cap.period, when);
      const id = `${key}@${at}`;
      const sum = sums.get(id);
      if (sum) sum.n += n;
      else sums.set(id, { key, period: cap.period, at, n });
    }
  }
  return [...sums.values()].filter((s) => s.n !== 0);
}

/** A counter in the limit's unit (tokens; cents with up to 6 decimals, as the counter is in µ¢): "12.5", "0.000001". */
const inUnits = (count: number, scale: number): number => Math.round(count) / scale;

export class RateLimits {
  private readonly emitted = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly windows: WindowCounters,
    private readonly events: EventSink,
    private readonly now: Clock,
    /** The account an event about this key belongs to (the payer's), resolved only on a breach. */
    private readonly ownerOf: (key: KeyRef) => Promise<AccountEvent['owner']>,
    private readonly onError: (err: unknown, what: string) => void,
  ) {}

  /**
   * Counts the request against the key's limits, or refuses it with the spec's 429. Admitted, it
   * returns where the key stands, as response headers (none for a key without limits):
   * `x-ratelimit-{limit,remaining,reset}-rpm` (reset in seconds) and
   * `x-ratelimit-{limit,used,remaining}-{tpd,cpd,cpm}` (calls in flight counted at what they reserved).
   */
  async admit(principal: ApiKeyPrincipal): Promise<Record<string, string> | null> {
    let standing: Record<string, string> | null = null;
    // The set caps' counters are read together, then judged in the table's order.
    const caps = WINDOW_CAPS.filter((cap) => principal[cap.type] !== null);
    const counts = await Promise.all(caps.map((cap) => this.windows.peek(`${cap.type}:${principal.keyId}`, cap.period)));
    for (const [i, cap] of caps.entries()) {
      const limit = principal[cap.type]!;
      const { count, resetAt } = counts[i]!;
      const used = inUnits(count, cap.scale);
      if (count >= limit * cap.scale) {
        await this.breached(principal, cap.type, limit, used, resetAt);
        throw new ApiError('rate_limit_exceeded', cap.refused(limit, String(used)), {
          bare: true,
          headers: {
            'retry-after': String(this.secondsUntil(resetAt)),
            [`x-ratelimit-limit-${cap.type}`]: String(limit),
            [`x-ratelimit-used-${cap.type}`]: String(used),
          },
        });
      }
      standing ??= {};
      standing[`x-ratelimit-limit-${cap.type}`] = String(limit);
      standing[`x-ratelimit-used-${cap.type}`] = String(used);
      standing[`x-ratelimit-remaining-${cap.type}`] = String(inUnits(limit * cap.scale - count, cap.scale));
    }
    if (principal.rpm !== null) {
      // Lazy: judged only by the count returned here; a crash may forget the last moment's hits.
      const minute = await this.windows.hit(`rpm:${principal.keyId}`, MINUTE, 1, true);
      if (minute.count > principal.rpm) {
        await this.breached(principal, 'rpm', principal.rpm, minute.count, minute.resetAt);
        const retry = this.secondsUntil(minute.resetAt);
        throw new ApiError('rate_limit_exceeded', `This API key's per-minute limit of ${principal.rpm} requests was exceeded; retry in ${retry} s.`, {
          bare: true,
          headers: { 'retry-after': String(retry), 'x-ratelimit-limit-rpm': String(principal.rpm) },
        });
      }
      standing ??= {};
      standing['x-ratelimit-limit-rpm'] = String(principal.rpm);
      standing['x-ratelimit-remaining-rpm'] = String(principal.rpm - minute.count);
      standing['x-ratelimit-reset-rpm'] = String(this.secondsUntil(minute.resetAt));
    }
    return standing;
  }

  /**
   * Reserves the most a call may use (`tokens`, and `uc` µ¢: its hold) in its key's windows of
   * instant `at`: tokens in the daily token window when the key has a TPD limit, µ¢ in both spend
   * windows when it has a CPD or CPM cap. Each limited window takes it only if it stays within its
   * limit; refused, it takes nothing (what one window took is given back) and throws the spec's 429.
   * Null when the key has none of these limits (nothing to reserve).
   */
  async reserve(payer: Payer, tokens: number, uc: number, at: number): Promise<Reservation | null> {
    const caps = payer.caps;
    if (!caps) return null;
    const reserved: Reservation = {
      keyId: payer.keyId,
      tokens: caps.tpd !== null ? Math.max(0, Math.ceil(tokens)) : 0,
      uc: caps.cpd !== null || caps.cpm !== null ? uc : 0,
    };
    const parts = this.parts(reserved);
    if (parts.length === 0) return null;
    const taken = await Promise.allSettled(
      parts.map(({ cap, key, by }) => {
        const limit = caps[cap.type];
        return limit === null ? this.windows.hit(key, cap.period, by, false, at) : this.windows.hitUpTo(key, cap.period, by, limit * cap.scale, at);
      }),
    );
    const refused = taken.findIndex((t) => t.status === 'fulfilled' && t.value === null);
    const failed = taken.find((t): t is PromiseRejectedResult => t.status === 'rejected');
    if (refused < 0 && !failed) return reserved;
    await Promise.all(
      parts.map(({ cap, key, by }, i) => {
        const t = taken[i]!;
        return t.status === 'fulfilled' && t.value !== null ? this.windows.hit(key, cap.period, -by, false, at) : undefined;
      }),
    );
    if (failed) throw failed.reason;
    const { cap, key, by } = parts[refused]!;
    const limit = caps[cap.type]!;
    const { count, resetAt } = await this.windows.peek(key, cap.period, at);
    const used = inUnits(count, cap.scale);
    await this.breached({ keyId: payer.keyId, prefix: payer.keyPrefix, userId: payer.userId }, cap.type, limit, used, resetAt);
    const left = inUnits(Math.max(0, limit * cap.scale - count), cap.scale);
    throw new ApiError('rate_limit_exceeded', cap.short(limit, String(left), String(inUnits(by, cap.scale))), {
      bare: true,
      headers: {
        'retry-after': String(this.secondsUntil(resetAt)),
        [`x-ratelimit-limit-${cap.type}`]: String(limit),
        [`x-ratelimit-used-${cap.type}`]: String(used),
      },
    });
  }

  /** Gives a reservation (if any) back whole, in the windows of `at`: its hold was refused, or replaced by another. */
  async unreserve(reserved: Reservation | null, at: number): Promise<void> {
    if (!reserved) return;
    await Promise.all(this.parts(reserved).map(({ cap, key, by }) => this.windows.hit(key, cap.period, -by, false, at)));
  }

  /** The windows a reservation is in, and what it holds in each. */
  private parts(r: Reservation) {
    return WINDOW_CAPS.map((cap) => ({ cap, key: `${cap.type}:${r.keyId}`, by: cap.fed === 'tokens' ? r.tokens : r.uc })).filter((p) => p.by > 0);
  }

  private secondsUntil(resetAt: number): number {
    return Math.max(1, Math.ceil((resetAt - this.now()) / 1000));
  }

  /** Emits rate_limit_exceeded unless it was already emitted for this key, limit and window (by any instance). */
  private async breached(principal: KeyRef, type: LimitType, limit: number, used: number, resetAt: number): Promise<void> {
    const id = `event:${type}:${principal.keyId}@${resetAt}`;
    if (this.emitted.has(id)) return;
    try {
      await this.store.collection('rate_windows').insertOne({ _id: id, expires_at: new Date(resetAt) });
    } catch (err) {
      if (isDuplicateKeyError(err)) {
        this.remember(id, resetAt);
        return;
      }
      this.onError(err, 'rate_limit_exceeded marker write failed');
      return;
    }
    this.remember(id, resetAt);
    try {
      await this.events.emit({
        event: 'rate_limit_exceeded',
        owner: await this.ownerOf(principal),
        fields: { key_prefix: principal.prefix, user_id: principal.userId, limit_type: type, limit, used },
      });
    } catch (err) {
      this.onError(err, 'rate_limit_exceeded event failed');
    }
  }

  private remember(id: string, resetAt: number): void {
    if (this.emitted.size >= EMITTED_CACHE) {
      const nowMs = this.now();
      for (const [k, until] of this.emitted) if (until <= nowMs) this.emitted.delete(k);
      if (this.emitted.size >= EMITTED_CACHE) this.emitted.clear();
    }
    this.emitted.set(id, resetAt);
  }
}
