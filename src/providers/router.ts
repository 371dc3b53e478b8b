// The upstream router: tries a model's routes in order until one serves the request.
//
// Failover. A route that fails to connect, times out, answers 5xx/408/409/425/429 or a malformed
// answer, or cannot work as configured (resolveRoutes flagged it; 401/402/403/404/405 or a redirect)
// is skipped for the next one. A 400/413/422 is about the request: it goes back to the caller as
// `invalid_request` (or `context_length_exceeded`) without trying further routes, with the upstream's
// explanation in which its model id, provider and host are replaced (hide.ts). A route whose
// provider cannot honour the request as asked (`refuses`: Anthropic has no `seed`, say) is passed
// over before any call, with no effect on its health; if no route served and none failed for a
// reason a retry could cure, the first refusal goes back as `invalid_request` naming the parameter.
// A stream commits to a route only once it delivered its first chunk with content (role-only
// chunks are held back and merged into it), so a route that accepts and then dies before saying
// anything still fails over; after that, a failure ends the stream with an UpstreamError from the
// iterator.
// When no route served: `model_misconfigured` if every route tried failed as misconfigured (or the
// model has no route), otherwise `model_unavailable`. The caller's signal firing ends everything
// with UpstreamError 'aborted' (nothing is left to answer).
//
// Health. Each route id counts consecutive failures (connect, timeout, http, protocol, config; not
// the client's errors, aborts or our own queue timeouts). At `failureThreshold` the route cools down
// for `cooldownMs`: it is skipped, except that once every other route failed or was cooling, the
// cooling route that failed least recently is tried as a last resort (so a model whose routes all
// cool down still gets one try per request). A success clears the count; a failure after the
// cool-down starts a new one at once.
//
// Shaping (max_concurrent, rpm) is limiters.ts's; where routes come from (a model's configured
// routes, keys from the environment) is routes.ts's; what the router answers when no route served
// is router-error.ts's.
import { abortedError } from './upstream-errors.ts';
import type { CancelSignal } from './cancel.ts';
import type { ProviderName } from './index.ts';
import { RouteLimiters } from './limiters.ts';
import { exhausted, rejected, type Attempt } from './router-error.ts';
import { pullFirst } from './stream-prelude.ts';
import {
  UpstreamError,
  type ChatChunk,
  type ChatRequest,
  type ChatResult,
  type EmbeddingsRequest,
  type EmbeddingsResult,
  type Provider,
  type RealtimeCapability,
  type RealtimeUpstream,
  type Refusal,
  type ResolvedRoute,
  type SpeakRequest,
  type SpeechAudio,
  type TranscribeRequest,
  type Transcript,
} from './types.ts';

/**
 * The capabilities the router serves with failover; `transcriptionJobs` is a job's submission,
 * which a route serves with its provider's job API or, without one, by transcribing inline.
 */
type RoutedCapability = 'chat' | 'embeddings' | 'transcribe' | 'speak' | 'transcriptionJobs' | 'realtime';

export interface RouterLogger {
  warn(obj: object, msg: string): void;
}

export interface RouterOptions {
  /** Consecutive failures that start a cool-down (default 3). */
  failureThreshold?: number;
  /** How long a failing route is skipped (default 30 s). */
  cooldownMs?: number;
  /** How long a call may wait for a route's limiter before moving on (default 10 s). */
  maxQueueWaitMs?: number;
  /** Calls queued per limiter beyond which new ones move on at once (default 1000). */
  maxQueued?: number;
  /** Limiters kept; idle ones are dropped first (default 1000). */
  maxLimiters?: number;
  now?: () => number;
  logger?: RouterLogger;
}

export interface RouteHealth {
  route: string;
  consecutiveFailures: number;
  lastFailureAt: number;
  coolingUntil: number | null;
}

interface Health {
  failures: number;
  lastFailureAt: number;
  coolUntil: number;
}

const MAX_HEALTH_ENTRIES = 10_000;

export class UpstreamRouter {
  readonly #providers: ReadonlyMap<string, Provider>;
  readonly #threshold: number;
  readonly #cooldownMs: number;
  readonly #now: () => number;
  readonly #logger: RouterLogger | undefined;
  readonly #health = new Map<string, Health>();
  readonly #limiters: RouteLimiters;

  constructor(providers: ReadonlyMap<ProviderName, Provider>, opts: RouterOptions = {}) {
    this.#providers = providers;
    this.#threshold = Math.max(1, opts.failureThreshold ?? 3);
    this.#cooldownMs = opts.cooldownMs ?? 30_000;
    this.#limiters = new RouteLimiters({
      maxQueueWaitMs: opts.maxQueueWaitMs ?? 10_000,
      maxQueued: opts.maxQueued ?? 1000,
      maxLimiters: opts.maxLimiters ?? 1000,
    });
    this.#now = opts.now ?? Date.now;
    this.#logger = opts.logger;
  }

  complete(routes: ResolvedRoute[], req: ChatRequest, signal: CancelSignal): Promise<{ result: ChatResult; route: ResolvedRoute }> {
    return this.#once(
      routes,
      signal,
      'chat',
      (p, route) => p.chat!.complete(route, req, signal),
      (p) => p.chat!.refuses?.(req),
    );
  }

  embed(routes: ResolvedRoute[], req: EmbeddingsRequest, signal: CancelSignal): Promise<{ result: EmbeddingsResult; route: ResolvedRoute }> {
    return this.#once(routes, signal, 'embeddings', (p, route) => p.embeddings!.embed(route, req, signal));
  }

  transcribe(routes: ResolvedRoute[], req: TranscribeRequest, signal: CancelSignal): Promise<{ result: Transcript; route: ResolvedRoute }> {
    return this.#once(
      routes,
      signal,
      'transcribe',
      (p, route) => p.transcribe!.transcribe(route, req, signal),
      (p, route) => p.transcribe!.refuses?.(req, route),
    );
  }

  /**
   * A transcription job's submission, under the same policy as every request (order, health and
   * cool-down, `max_concurrent` and `rpm`, failover before acceptance only): `attempt` hands the
   * recording to one route (the job's once-only step for it) and resolves when that route accepted
   * it, or transcribed it inline; the route's slot is held until then. A job may wait longer for a
   * slot than a request (`queueWaitMs`): it has no client waiting on a socket.
   */
  submitJob<T>(
    routes: ResolvedRoute[],
    signal: CancelSignal,
    attempt: (provider: Provider, route: ResolvedRoute) => Promise<T>,
    refuses: (provider: Provider, route: ResolvedRoute) => Refusal | undefined,
    opts: { queueWaitMs?: number } = {},
  ): Promise<{ result: T; route: ResolvedRoute }> {
    return this.#once(routes, signal, 'transcriptionJobs', attempt, refuses, opts.queueWaitMs);
  }

  /**
   * A realtime recognition socket on the first route that opens one, under the same policy: the
   * route's slot is held for the socket's life, until `done` is called; `done(failure)` counts a
   * socket that failed against its route, as a stream's failure is (failover happens between
   * utterances, by the caller opening again).
   */
  async openRealtime(
    routes: ResolvedRoute[],
    signal: CancelSignal,
    open: (capability: RealtimeCapability, route: ResolvedRoute) => Promise<RealtimeUpstream>,
  ): Promise<{ upstream: RealtimeUpstream; route: ResolvedRoute; done(failure?: unknown): void }> {
    const served = await this.#serve(routes, signal, 'realtime', async (p, route) => {
      const upstream = await open(p.realtime!, route);
      this.#succeeded(route);
      return upstream;
    });
    let finished = false;
    return {
      upstream: served.value,
      route: served.route,
      done: (failure?: unknown) => {
        if (finished) return;
        finished = true;
        served.release();
        if (failure === undefined) return;
        const classified = this.#classify(served.route, failure, signal);
        if (classified.kind !== 'aborted') this.#failed(served.route, classified, signal);
      },
    };
  }

  /**
   * Opens a stream on the first route that delivers a chunk. `first` is that chunk (with the role
   * of any role-only chunks before it merged in), or null for a stream that ended empty. `rest`
   * yields the remaining chunks once and throws UpstreamError if the upstream fails mid-stream.
   * Iterate `rest` to its end or leave the loop (return()); the caller's signal firing also ends
   * it and frees the route's slot.
   */
  async stream(
    routes: ResolvedRoute[],
    req: ChatRequest,
    signal: CancelSignal,
  ): Promise<{ route: ResolvedRoute; first: ChatChunk | null; rest: AsyncIterable<ChatChunk> }> {
    const served = await this.#serve(
      routes,
      signal,
      'chat',
      async (p, route) => {
        const it = (await p.chat!.stream(route, req, signal))[Symbol.asyncIterator]();
        try {
          const first = await pullFirst(it);
          this.#succeeded(route);
          return { it, first };
        } catch (err) {
          void it.return?.().catch(() => {});
          throw err;
        }
      },
      (p) => p.chat!.refuses?.(req),
    );
    const { it, first } = served.value;
    return { route: served.route, first, rest: this.#rest(served.route, served.release, it, signal) };
  }

  /**
   * Opens speech on the first route that delivers audio: a route that fails before its first
   * audio byte fails over to the next; after it, a failure ends `rest` with an UpstreamError (the
   * client already has audio from that route). `first` is that first chunk, or null for an upstream
   * that ended without audio. Iterate `rest` to its end or leave the loop, as with `stream`.
   */
  async speak(
    routes: ResolvedRoute[],
    req: SpeakRequest,
    signal: CancelSignal,
  ): Promise<{ route: ResolvedRoute; audio: Omit<SpeechAudio, 'chunks'>; first: Buffer | null; rest: AsyncIterable<Buffer> }> {
    const served = await this.#serve(
      routes,
      signal,
      'speak',
      async (p, route) => {
        const { chunks, ...audio } = await p.speak!.speak(route, req, signal);
        const it = chunks[Symbol.asyncIterator]();
        try {
          let next = await it.next();
          while (!next.done && next.value.length === 0) next = await it.next();
          this.#succeeded(route);
          return { it, audio, first: next.done ? null : next.value };
        } catch (err) {
          void it.return?.().catch(() => {});
          throw err;
        }
      },
      (p, route) => p.speak!.refuses?.(req, route),
    );
    const { it, audio, first } = served.value;
    return { route: served.route, audio, first, rest: this.#rest(served.route, served.release, it, signal) };
  }

  /**
   * The rest of a stream committed to `route`: yields once, frees the route's slot when it ends,
   * when the consumer leaves or when the caller's signal fires; a failure counts against the route.
   */
  #rest<C>(route: ResolvedRoute, release: () => void, it: AsyncIterator<C>, signal: CancelSignal): AsyncGenerator<C> {
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      signal.removeEventListener('abort', end);
      release();
      void it.return?.().catch(() => {});
    };
    signal.addEventListener('abort', end, { once: true });
    if (signal.aborted) end();

    const self = this;
    async function* rest(): AsyncGenerator<C> {
      try {
        for (;;) {
          if (ended) throw abortedError(route.id);
          const next = await it.next();
          if (next.done) return;
          yield next.value;
        }
      } catch (err) {
        const failure = self.#classify(route, err, signal);
        if (failure.kind !== 'aborted') self.#failed(route, failure, signal);
        throw failure;
      } finally {
        end();
      }
    }
    return rest();
  }

  /** Routes with failures on record, for metrics and the admin view. */
  health(): RouteHealth[] {
    const now = this.#now();
    return [...this.#health].map(([route, h]) => ({
      route,
      consecutiveFailures: h.failures,
      lastFailureAt: h.lastFailureAt,
      coolingUntil: h.failures >= this.#threshold && h.coolUntil > now ? h.coolUntil : null,
    }));
  }

  /** Stops every limiter (queued calls fail over or give up); for shutdown and tests. */
  close(): Promise<void> {
    return this.#limiters.close();
  }

  async #once<T>(
    routes: ResolvedRoute[],
    signal: CancelSignal,
    capability: RoutedCapability,
    call: (provider: Provider, route: ResolvedRoute) => Promise<T>,
    refuses?: (provider: Provider, route: ResolvedRoute) => Refusal | undefined,
    queueWaitMs?: number,
  ): Promise<{ result: T; route: ResolvedRoute }> {
    const served = await this.#serve(
      routes,
      signal,
      capability,
      async (p, route) => {
        const result = await call(p, route);
        this.#succeeded(route);
        return result;
      },
      refuses,
      queueWaitMs,
    );
    served.release();
    return { result: served.value, route: served.route };
  }

  async #serve<T>(
    routes: ResolvedRoute[],
    signal: CancelSignal,
    capability: RoutedCapability,
    attempt: (provider: Provider, route: ResolvedRoute) => Promise<T>,
    refuses?: (provider: Provider, route: ResolvedRoute) => Refusal | undefined,
    queueWaitMs?: number,
  ): Promise<{ value: T; route: ResolvedRoute; release: () => void }> {
    const attempts: Attempt[] = [];
    let refusal: Refusal | undefined;
    for (const route of this.#plan(routes)) {
      if (signal.aborted) throw abortedError(route.id);
      const provider = this.#providers.get(route.provider);
      if (route.problem || !provider || !serves(provider, capability)) {
        const why = route.problem ?? `provider "${route.provider}" has no ${capability}`;
        attempts.push({ route: route.id, outcome: 'config' });
        this.#logger?.warn({ route: route.id, problem: why }, 'upstream route is misconfigured');
        continue;
      }
      const refused = refuses?.(provider, route);
      if (refused) {
        attempts.push({ route: route.id, outcome: 'unsupported' });
        refusal ??= refused;
        continue;
      }
      let release: () => void;
      try {
        release = await this.#limiters.acquire(route, signal, queueWaitMs);
      } catch (err) {
        if (signal.aborted) throw abortedError(route.id);
        attempts.push({ route: route.id, outcome: 'queue_timeout' });
        this.#logger?.warn({ route: route.id, err: (err as Error).message }, 'upstream route queue full or too slow');
        continue;
      }
      try {
        const value = await attempt(provider, route);
        return { value, route, release };
      } catch (err) {
        release();
        const failure = this.#classify(route, err, signal);
        if (failure.kind === 'aborted') throw failure;
        attempts.push({ route: route.id, outcome: failure.kind, ...(failure.status !== undefined ? { status: failure.status } : {}) });
        if (failure.kind === 'client') throw rejected(failure, route, attempts);
        this.#failed(route, failure, signal);
      }
    }
    throw exhausted(attempts, refusal);
  }

  /** Healthy routes in their order, then the cooling route that failed least recently. */
  #plan(routes: ResolvedRoute[]): ResolvedRoute[] {
    const now = this.#now();
    const healthy: ResolvedRoute[] = [];
    let fallback: { route: ResolvedRoute; at: number } | null = null;
    for (const route of routes) {
      const h = this.#health.get(route.id);
      if (!h || h.failures < this.#threshold || h.coolUntil <= now) healthy.push(route);
      else if (!fallback || h.lastFailureAt < fallback.at) fallback = { route, at: h.lastFailureAt };
    }
    return fallback ? [...healthy, fallback.route] : healthy;
  }

  #classify(route: ResolvedRoute, err: unknown, signal: CancelSignal): UpstreamError {
    if (signal.aborted) return abortedError(route.id);
    if (err instanceof UpstreamError) return err;
    // A bug in translation, not the upstream's doing; logged with its stack, failed over like a malformed answer.
    this.#logger?.warn({ route: route.id, err }, 'unexpected error calling upstream');
    return new UpstreamError('protocol', `route ${route.id}: unexpected failure`, true);
  }

  #succeeded(route: ResolvedRoute): void {
    this.#health.delete(route.id);
  }

  #failed(route: ResolvedRoute, failure: UpstreamError, signal: CancelSignal): void {
    if (signal.aborted || failure.kind === 'client' || failure.kind === 'aborted') return;
    const now = this.#now();
    const h = this.#health.get(route.id) ?? { failures: 0, lastFailureAt: 0, coolUntil: 0 };
    h.failures += 1;
    h.lastFailureAt = now;
    if (h.failures >= this.#threshold) h.coolUntil = now + this.#cooldownMs;
    this.#health.delete(route.id);
    this.#health.set(route.id, h);
    if (this.#health.size > MAX_HEALTH_ENTRIES) {
      const oldest = this.#health.keys().next().value;
      if (oldest !== undefined) this.#health.delete(oldest);
    }
    this.#logger?.warn(
      { route: route.id, kind: failure.kind, status: failure.status, consecutiveFailures: h.failures, cooling: h.failures >= this.#threshold },
      failure.message,
    );
  }
}

function serves(provider: Provider, capability: RoutedCapability): boolean {
  return capability === 'transcriptionJobs'
    ? provider.transcriptionJobs !== undefined || provider.transcribe !== undefined
    : provider[capability] !== undefined;
}
