// Small pieces the services share: the clock type and ISO dates (`Clock`, `iso`), integer ids from a
// counter document (`nextId`: this file owns the `counters` collection), fixed-window counters kept
// in the store (`WindowCounters`, so every instance counts against one limit) and the 429 a full
// window answers (`tooManyRequests`). The two store-backed pieces type against the store port
// (src/store/port.ts, types only).
import { ApiError } from '../errors.ts';
import { isDuplicateKeyError, type Collection, type Store } from '../store/port.ts';

export type Clock = () => number;

/** Next integer id for `name` (users, orgs, keys...): one atomic $inc on a counter document. */
export async function nextId(store: Store, name: string): Promise<number> {
  const doc = await store
    .collection<{ _id: string; seq: number }>('counters')
    .findOneAndUpdate({ _id: name }, { $inc: { seq: 1 } }, { upsert: true, returnDocument: 'after' });
  if (!doc) throw new Error(`counter ${name} did not return a value`);
  return doc.seq;
}

export interface WindowHit {
  count: number;
  /** Epoch ms when the window resets. */
  resetAt: number;
}

/** A counter's window: a number of seconds (windows aligned to the epoch), or the UTC calendar month. */
export type WindowPeriod = number | 'month';

interface WindowDoc {
  _id: string;
  count: number;
  expires_at: Date;
  [k: string]: unknown;
}

/**
 * Fixed-window counters in the store: one document per (key, window), `$inc`ed atomically, with a
 * TTL for cleanup only (the window start is part of the id, so expiry never affects correctness).
 * Each user of counters opens their collection and hands it in (`rate_windows`: billing's,
 * `auth_windows`: accounts', `invitation_windows`: invitations'), so its owner is where it is named.
 */
export class WindowCounters {
  constructor(
    private readonly docs: Collection<WindowDoc>,
    private readonly now: Clock,
  ) {}

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { expires_at: 1 }, expireAfterSeconds: 0 });
  }

  /** Epoch ms when the window of `period` holding instant `at` starts. */
  windowStart(period: WindowPeriod, at: number): number {
    if (period === 'month') {
      const d = new Date(at);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
    const size = period * 1000;
    return Math.floor(at / size) * size;
  }

  /** The period is part of the id: an hour and a day (or a month) can start at the same instant. */
  private window(key: string, period: WindowPeriod, at = this.now()): { id: string; start: number; resetAt: number } {
    const start = this.windowStart(period, at);
    const id = `${key}/${period}@${start}`;
    if (period === 'month') {
      const d = new Date(start);
      return { id, start, resetAt: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
    }
    return { id, start, resetAt: start + period * 1000 };
  }

  /**
   * Adds `by` to the window of `key` holding instant `at` (default now) and returns the new count.
   * `lazy` skips waiting for the disk (the store's `j: false`: reads still see the hit, a crash may
   * forget it): for counters whose last moment of hits may be lost (per-key RPM), not for ones that
   * lock someone out.
   */
  async hit(key: string, period: WindowPeriod, by = 1, lazy = false, at?: number): Promise<WindowHit> {
    const w = this.window(key, period, at);
    const doc = await this.docs.findOneAndUpdate(
      { _id: w.id },
      { $inc: { count: by }, $setOnInsert: { expires_at: new Date(w.resetAt) } },
      { upsert: true, returnDocument: 'after', ...(lazy ? { writeConcern: { j: false } } : {}) },
    );
    return { count: doc?.count ?? by, resetAt: w.resetAt };
  }

  /**
   * Adds `by` to the window of `key` holding instant `at` unless that would take its count past
   * `max`: one conditional write (a window whose count is too high refuses the filter, and the
   * upsert's insert then collides with it). Null when refused, having added nothing.
   */
  async hitUpTo(key: string, period: WindowPeriod, by: number, max: number, at = this.now()): Promise<WindowHit | null> {
    if (by > max) return null;
    const w = this.window(key, period, at);
    try {
      const doc = await this.docs.findOneAndUpdate(
        { _id: w.id, count: { $lte: max - by } },
        { $inc: { count: by }, $setOnInsert: { expires_at: new Date(w.resetAt) } },
        { upsert: true, returnDocument: 'after' },
      );
      return { count: doc?.count ?? by, resetAt: w.resetAt };
    } catch (err) {
      if (isDuplicateKeyError(err)) return null;
      throw err;
    }
  }

  /** The count of the window holding `at` (default now) without changing it. */
  async peek(key: string, period: WindowPeriod, at?: number): Promise<WindowHit> {
    const w = this.window(key, period, at);
    const doc = await this.docs.findOne({ _id: w.id });
    return { count: doc?.count ?? 0, resetAt: w.resetAt };
  }

  async reset(key: string, period: WindowPeriod): Promise<void> {
    await this.docs.deleteOne({ _id: this.window(key, period).id });
  }
}

/** 429 `rate_limit_exceeded` for a window that resets at `resetAt`, with Retry-After in seconds. */
export function tooManyRequests(resetAt: number, now: number, what: string): ApiError {
  const seconds = Math.max(1, Math.ceil((resetAt - now) / 1000));
  return new ApiError('rate_limit_exceeded', `${what}; try again in ${seconds} s.`, { headers: { 'retry-after': String(seconds) } });
}

export const iso = (d: Date | null | undefined): string | null => (d ? d.toISOString() : null);
