// Recognition over a provider's own streaming protocol (the `realtime` capability: OpenAI Realtime,
// Sarvam streaming, Deepgram live), for a model whose first route has `realtime: true`.
//
// One upstream socket at a time, opened with the session's first audio and fed every sample as it
// arrives (converted to what the upstream takes: G.711 re-encoded where it takes the client's law,
// else 16-bit PCM, resampled with the speex resampler when its rate differs, as OpenAI's 24 kHz).
// The gateway's own VAD decides the turns: each committed utterance is a `commit` on that socket,
// its deltas streamed as they come, its text the answer. What the upstream hears of audio not yet
// committed (Sarvam's partials, Deepgram's interim results) is reported as it comes: to the
// utterance whose commit is waiting to be sent, else to the speech in progress (`listen`).
//
// Sockets are opened through the router's one failover policy (route health and cool-down,
// `max_concurrent` and `rpm`: a socket holds its route's slot for its life; a socket that fails
// counts against its route). Failover between utterances, never inside one: when the upstream
// closed or failed with no utterance pending, the next utterance opens a socket on the routes after
// that one (then the ones before it, wrapping; cooling routes last) and sends it that utterance's
// audio from the session's buffer before committing; the socket then serves the utterances after it.
// The context (prompt, key terms) a socket opens with is the session's latest; when an utterance's
// differs from its socket's, `configure` sends it there first (where the protocol can take it).
// An upstream that fails while an utterance is pending fails that utterance at once (the session answers with an `error` frame); one that stalls is cut by the
// session's `utteranceTimeoutMs`. Audio that arrives while a socket opens waits, at most
// `maxQueuedMs` of it; past that the socket counts as failed (the next utterance fails over).
import type { Logger } from 'pino';
import type { UpstreamRouter } from '../providers/router.ts';
import { UpstreamError, type Heard, type RealtimeOpenRequest, type RealtimeUpstream, type RecognitionContext, type ResolvedRoute } from '../providers/types.ts';
import { g711Encode } from '../speech/g711.ts';
import { bytesOf } from '../speech/pcm.ts';
import type { Resampler, Resamplers } from '../speech/resample.ts';
import type { Recognised, SessionRecogniser, Utterance } from './recognisers.ts';

export interface UpstreamRecogniserOptions {
  /** The model's routes that stream (`realtime: true`), in order. */
  routes: ResolvedRoute[];
  router: Pick<UpstreamRouter, 'openRealtime'>;
  request: RealtimeOpenRequest;
  resamplers: Resamplers;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Audio held while a socket opens before it is given up for a replay (ms). */
  maxQueuedMs?: number;
}

interface Connection {
  /** The route that opened it, once one did. */
  route: ResolvedRoute | null;
  upstream: RealtimeUpstream | null;
  opening: Promise<RealtimeUpstream | null>;
  /** Why no route opened, when none did. */
  error: unknown;
  convert: (samples: Int16Array) => Uint8Array;
  resampler: Resampler | null;
  /** Frees the route's slot (with the failure, when the socket failed). */
  done: (failure?: unknown) => void;
  /** The context the socket has: the one it opened with, then each one `configure` sent. */
  context: RecognitionContext | undefined;
  /** Samples (at the session's rate) waiting for the socket to open; null once it overflowed. */
  queued: Int16Array[] | null;
  queuedSamples: number;
  failed: boolean;
}

export function upstreamRecogniser(opts: UpstreamRecogniserOptions): SessionRecogniser {
  const rate = opts.request.sampleRate;
  const maxQueued = Math.round(((opts.maxQueuedMs ?? 30_000) * rate) / 1000);
  const abort = new AbortController();
  let conn: Connection | null = null;
  let closed = false;
  /** Commits are sent one after another (a failover finishes before the next utterance picks its socket). */
  let sending: Promise<unknown> = Promise.resolve();
  /** Where heard text of uncommitted audio goes: utterances committed here but not yet upstream (in order), else the speech in progress. */
  const unsent: ((h: Heard) => void)[] = [];
  let onSpeech: ((h: Heard) => void) | null = null;
  const heardUncommitted = (h: Heard) => (unsent[0] ?? onSpeech)?.(h);

  /** The routes in the order a new socket tries them: those after `failed` first, wrapping. */
  const orderAfter = (failed: ResolvedRoute | null): ResolvedRoute[] => {
    const at = failed ? opts.routes.indexOf(failed) : -1;
    return at < 0 ? opts.routes : [...opts.routes.slice(at + 1), ...opts.routes.slice(0, at + 1)];
  };

  /** The context a new socket opens with: the session's at its start, then the latest utterance's. */
  let latest = opts.request.context;
  const { context: _opened, ...baseRequest } = opts.request;

  const connect = (order: ResolvedRoute[]): Connection => {
    const request: RealtimeOpenRequest = latest ? { ...baseRequest, context: latest } : baseRequest;
    const c: Connection = {
      context: latest,
      route: null,
      upstream: null,
      opening: null!,
      error: null,
      convert: () => new Uint8Array(0),
      resampler: null,
      done: () => {},
      queued: [],
      queuedSamples: 0,
      failed: false,
    };
    c.opening = opts.router
      .openRealtime(order, abort.signal, (capability, route) => {
        // The audio as this route's upstream takes it (a failed route's converter is let go).
        const format = capability.format(request);
        c.resampler?.destroy();
        const resampler = format.sampleRate === rate ? null : opts.resamplers.create({ from: rate, to: format.sampleRate, quality: 5 });
        c.resampler = resampler;
        c.convert = (samples: Int16Array): Uint8Array => {
          const pcm = resampler ? resampler.process(samples) : samples;
          return format.encoding === 'pcm_s16le' ? bytesOf(pcm.slice()) : g711Encode(format.encoding, pcm);
        };
        return capability.open(route, request, abort.signal);
      })
      .then(
        ({ upstream: up, route, done }) => {
          c.done = done;
          if (closed || c !== conn) {
            up.close();
            done();
            return null;
          }
          c.route = route;
          c.upstream = up;
          up.listen(heardUncommitted);
          for (const s of c.queued ?? []) up.send(c.convert(s));
          c.queued = null;
          void up.ended.then((why) => {
            if (c.failed || closed || c !== conn) return;
            c.failed = true;
            done(why);
            opts.log.warn({ route: route.id, why: why.message }, 'realtime upstream ended; the next utterance fails over');
          });
          return up;
        },
        (err: unknown) => {
          c.failed = true;
          c.error = err;
          if (!closed) opts.log.warn({ err: (err as Error).message }, 'no realtime upstream opened');
          return null;
        },
      );
    return c;
  };

  /** A fresh socket for an utterance, on the routes after the one that failed, sent the utterance's audio. */
  const failover = async (u: Utterance): Promise<RealtimeUpstream> => {
    const failed = conn?.route ?? null;
    if (conn) dispose(conn);
    const c = (conn = connect(orderAfter(failed)));
    c.queued = null; // what arrives while it opens comes after the utterance: not needed for it
    const up = await c.opening;
    if (!up)
      throw c.error instanceof UpstreamError
        ? c.error
        : new UpstreamError('connect', `no realtime route opened: ${(c.error as Error | null)?.message ?? 'none'}`, true);
    up.send(c.convert(u.samples()));
    return up;
  };

  const dispose = (c: Connection) => {
    c.upstream?.close();
    c.done();
    c.resampler?.destroy();
    c.resampler = null;
  };

  return {
    mode: 'streaming',
    audio(samples) {
      if (closed) return;
      if (!conn) conn = connect(opts.routes);
      const c = conn;
      if (c.failed) return;
      if (c.upstream) return c.upstream.send(c.convert(samples));
      if (c.queued === null) return;
      c.queued.push(samples);
      c.queuedSamples += samples.length;
      if (c.queuedSamples > maxQueued) {
        c.queued = null; // too long to open: the next utterance fails over
        c.failed = true;
      }
    },
    listen(onHeard) {
      onSpeech = onHeard;
    },
    async recognise(u, signal, onHeard): Promise<Recognised> {
      if (closed) throw new UpstreamError('aborted', 'the session is closed', false);
      const heard = (h: Heard) => onHeard?.(h);
      unsent.push(heard);
      const sent = sending.then(async () => {
        try {
          latest = u.context;
          let up: RealtimeUpstream | null = null;
          if (conn && !conn.failed) up = conn.upstream ?? (await conn.opening);
          if (!up || conn?.failed) up = await failover(u);
          // The context changed since the socket's: sent where the protocol can take it now.
          if (conn && conn.context !== u.context) {
            up.configure(u.context);
            conn.context = u.context;
          }
          const answer = up.commit(signal, heard);
          answer.catch(() => {});
          return { answer }; // wrapped: settles when the commit is sent, not when it is answered
        } finally {
          unsent.splice(unsent.indexOf(heard), 1);
        }
      });
      sending = sent.catch(() => undefined); // the next commit waits for this one to be sent
      const turn = await (await sent).answer;
      return { text: turn.text.trim(), start: u.startMs / 1000, end: u.endMs / 1000 };
    },
    close() {
      if (closed) return;
      closed = true;
      abort.abort(new Error('session closed'));
      if (conn) dispose(conn);
    },
  };
}
