// Shaping: the router's per-route limits. A route with max_concurrent and/or rpm gets a limiter (per
// route id and settings, created on first use, at most `maxLimiters` kept): max_concurrent bounds
// calls in flight (a stream holds its slot until it ends), rpm spaces starts 60000/rpm ms apart. A
// burst queues; a call that waited `maxQueueWaitMs` (or found `maxQueued` ahead of it) moves on to
// the next route (the router's choice: this file only refuses the slot).
// Routes with rpm use Bottleneck, whose timed scheduling is what rate shaping needs. Routes with
// only max_concurrent use p-limit: Bottleneck runs every job through a setTimeout (clamped to 1 ms)
// and cost ~400 µs of CPU and ~2.5 ms of latency per job here even far below the cap, which cut the
// gateway's throughput by 4x (bench/chat.ts); p-limit's microtask queue costs a few µs.
import Bottleneck from 'bottleneck';
import pLimit from 'p-limit';
import type { CancelSignal } from './cancel.ts';
import { abortedError } from './upstream-errors.ts';
import { positive } from './routes.ts';
import type { ResolvedRoute } from './types.ts';

export interface RouteLimitersOptions {
  /** How long a call may wait for a route's limiter before moving on. */
  maxQueueWaitMs: number;
  /** Calls queued per limiter beyond which new ones move on at once. */
  maxQueued: number;
  /** Limiters kept; idle ones are dropped first. */
  maxLimiters: number;
}

/** The limiters of the routes that have limits, kept by route id and settings. */
export class RouteLimiters {
  readonly #maxQueueWaitMs: number;
  readonly #maxQueued: number;
  readonly #maxLimiters: number;
  readonly #limiters = new Map<string, Limiter>();

  constructor(opts: RouteLimitersOptions) {
    this.#maxQueueWaitMs = opts.maxQueueWaitMs;
    this.#maxQueued = opts.maxQueued;
    this.#maxLimiters = opts.maxLimiters;
  }

  /**
   * Waits for the route's limiter; resolves to the function that frees the slot. Rejects with the
   * caller's abort, or with why no slot came (waited `waitMs`, or the queue is full).
   */
  acquire(route: ResolvedRoute, signal: CancelSignal, waitMs = this.#maxQueueWaitMs): Promise<() => void> {
    const limiter = this.#limiter(route);
    if (!limiter) return Promise.resolve(noop);
    return new Promise((resolve, reject) => {
      let state: 'queued' | 'running' | 'gone' = 'queued';
      const giveUp = (err: Error): void => {
        if (state !== 'queued') return;
        state = 'gone';
        stopWaiting();
        reject(err);
      };
      const onAbort = (): void => giveUp(abortedError(route.id));
      const timer = setTimeout(() => giveUp(new Error(`waited ${waitMs} ms for a slot`)), waitMs);
      const stopWaiting = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      limiter
        .schedule(() => {
          if (state === 'gone') return Promise.resolve();
          state = 'running';
          stopWaiting();
          return new Promise<void>((done) => {
            let freed = false;
            resolve(() => {
              if (freed) return;
              freed = true;
              done();
            });
          });
        })
        .catch(() => giveUp(new Error('the route queue is full')));
    });
  }

  /** Stops every limiter (queued calls fail over or give up); for shutdown and tests. */
  async close(): Promise<void> {
    const limiters = [...this.#limiters.values()];
    this.#limiters.clear();
    await Promise.all(limiters.map((l) => l.stop()));
  }

  #limiter(route: ResolvedRoute): Limiter | null {
    const maxConcurrent = positive(route.maxConcurrent);
    const rpm = positive(route.rpm);
    if (maxConcurrent === null && rpm === null) return null;
    const key = `${route.id}|${maxConcurrent ?? ''}|${rpm ?? ''}`;
    const found = this.#limiters.get(key);
    if (found) {
      this.#limiters.delete(key);
      this.#limiters.set(key, found);
      return found;
    }
    if (this.#limiters.size >= this.#maxLimiters) this.#evictIdleLimiter();
    const limiter = rpm === null ? concurrencyLimiter(maxConcurrent!, this.#maxQueued) : rateLimiter(maxConcurrent, rpm, this.#maxQueued);
    this.#limiters.set(key, limiter);
    return limiter;
  }

  #evictIdleLimiter(): void {
    for (const [key, l] of this.#limiters) {
      if (l.idle()) {
        this.#limiters.delete(key);
        void l.stop();
        return;
      }
    }
  }
}

const noop = (): void => {};

/** What the router needs of a limiter: run a job when allowed, refuse when the queue is full. */
interface Limiter {
  /** Resolves when the job finished; rejects at once when `maxQueued` jobs already wait. */
  schedule(job: () => Promise<void>): Promise<void>;
  idle(): boolean;
  stop(): Promise<void>;
}

function concurrencyLimiter(maxConcurrent: number, maxQueued: number): Limiter {
  const limit = pLimit(maxConcurrent);
  return {
    schedule: (job) => (limit.pendingCount >= maxQueued ? Promise.reject(new Error('the route queue is full')) : limit(job)),
    idle: () => limit.activeCount + limit.pendingCount === 0,
    stop: async () => limit.clearQueue(),
  };
}

function rateLimiter(maxConcurrent: number | null, rpm: number, maxQueued: number): Limiter {
  const b = new Bottleneck({ maxConcurrent, minTime: Math.ceil(60_000 / rpm), highWater: maxQueued, strategy: Bottleneck.strategy.OVERFLOW });
  b.on('error', () => {});
  return {
    schedule: (job) => b.schedule(job),
    idle: () => {
      const c = b.counts();
      return (c.RECEIVED ?? 0) + (c.QUEUED ?? 0) + (c.RUNNING ?? 0) + (c.EXECUTING ?? 0) === 0;
    },
    stop: () => b.disconnect(),
  };
}
