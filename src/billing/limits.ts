// Per-key limits, counted in the store so that every instance enforces one limit:
// - rpm: a fixed 60-second window (`rpm:<key id>`), one atomic `$inc` per request;
// - tpd: prompt plus completion tokens per UTC day (`tpd:<key id>`), read before the call and
//   increased by the settled tokens (through the usage flush, so it trails by one flush interval);
// - cpd / cpm: spend in cents per UTC day / UTC calendar month (`cpd:<key id>`, `cpm:<key id>`,
//   counted in µ¢), read and increased alike. Caps against a leaked or runaway key, not the
//   wallet's guarantee: calls in flight when one is reached finish and are charged, so a window's
//   spend may pass it by what they cost.
// A breach is a 429 with the spec's bare `{detail}` body and headers, and one rate_limit_exceeded
// event per key, limit and window: a marker document decides which instance emits it.
import { ApiError } from '../errors.ts';
import type { Clock, WindowCounters, WindowPeriod } from '../shared/common.ts';
import type { AccountEvent, EventSink } from '../shared/events.ts';
import type { ApiKeyPrincipal, LimitName } from '../identity/keys.ts';
import { isDuplicateKeyError, type Store } from '../store/port.ts';
import { MICROCENTS_PER_CENT } from './money.ts';

const MINUTE = 60;
const DAY = 86_400;
/** Windows whose event this instance knows was emitted, so a flood of 429s costs no write each. */
const EMITTED_CACHE = 10_000;

export type LimitType = LimitName;

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
  },
  {
    type: 'cpd',
    period: DAY,
    fed: 'spend',
    scale: MICROCENTS_PER_CENT,
    refused: (limit: number, used: string) =>
      `This API key's daily spend limit of ${limit} cents was reached (${used} spent today); it resets at midnight UTC.`,
  },
  {
    type: 'cpm',
    period: 'month',
    fed: 'spend',
    scale: MICROCENTS_PER_CENT,
    refused: (limit: number, used: string) =>
      `This API key's monthly spend limit of ${limit} cents was reached (${used} spent this month); it resets on the 1st at 00:00 UTC.`,
  },
] as const satisfies readonly {
  type: LimitType;
  period: WindowPeriod;
  fed: 'tokens' | 'spend';
  scale: number;
  refused: (limit: number, used: string) => string;
}[];

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
    private readonly ownerOf: (principal: ApiKeyPrincipal) => Promise<AccountEvent['owner']>,
    private readonly onError: (err: unknown, what: string) => void,
  ) {}

  /**
   * Counts the request against the key's limits, or refuses it with the spec's 429. Admitted, it
   * returns where the key stands, as response headers (none for a key without limits):
   * `x-ratelimit-{limit,remaining,reset}-rpm` (reset in seconds) and
   * `x-ratelimit-{limit,used,remaining}-tpd` (used as of the last usage flush).
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

  private secondsUntil(resetAt: number): number {
    return Math.max(1, Math.ceil((resetAt - this.now()) / 1000));
  }

  /** Emits rate_limit_exceeded unless it was already emitted for this key, limit and window (by any instance). */
  private async breached(principal: ApiKeyPrincipal, type: LimitType, limit: number, used: number, resetAt: number): Promise<void> {
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
