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
// Failover between utterances, never inside one: when the upstream closed or failed with no
// utterance pending, the next utterance opens the next route (then the ones after it, wrapping)
// and sends it that utterance's audio from the session's buffer before committing; the socket then
// serves the utterances after it. An upstream that fails while an utterance is pending fails that
// utterance at once (the session answers with an `error` frame); one that stalls is cut by the
// session's `utteranceTimeoutMs`. Audio that arrives while a socket opens waits, at most
// `maxQueuedMs` of it; past that the socket counts as failed (the next utterance fails over).
import type { Logger } from 'pino';
import { UpstreamError, type Heard, type RealtimeCapability, type RealtimeOpenRequest, type RealtimeUpstream, type ResolvedRoute } from '../providers/types.ts';
import { g711Encode } from '../speech/g711.ts';
import { bytesOf } from '../speech/pcm.ts';
import type { Resampler, Resamplers } from '../speech/resample.ts';
import type { Recognised, SessionRecogniser, Utterance } from './recognisers.ts';

export interface RealtimeRoute {
  route: ResolvedRoute;
  capability: RealtimeCapability;
}

export interface UpstreamRecogniserOptions {
  routes: RealtimeRoute[];
  request: RealtimeOpenRequest;
  resamplers: Resamplers;
  log: Pick<Logger, 'info' | 'warn'>;
  /** Audio held while a socket opens before it is given up for a replay (ms). */
  maxQueuedMs?: number;
}

interface Connection {
  index: number;
  upstream: RealtimeUpstream | null;
  opening: Promise<RealtimeUpstream | null>;
  convert: (samples: Int16Array) => Uint8Array;
  resampler: Resampler | null;
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
  let next = 0; // the route the next connection tries first
  let closed = false;
  /** Commits are sent one after another (a failover finishes before the next utterance picks its socket). */
  let sending: Promise<unknown> = Promise.resolve();
  /** Where heard text of uncommitted audio goes: utterances committed here but not yet upstream (in order), else the speech in progress. */
  const unsent: ((h: Heard) => void)[] = [];
  let onSpeech: ((h: Heard) => void) | null = null;
  const heardUncommitted = (h: Heard) => (unsent[0] ?? onSpeech)?.(h);

  const connect = (index: number): Connection => {
    const r = opts.routes[index % opts.routes.length]!;
    const format = r.capability.format(opts.request);
    const resampler = format.sampleRate === rate ? null : opts.resamplers.create({ from: rate, to: format.sampleRate, quality: 5 });
    const convert = (samples: Int16Array): Uint8Array => {
      const pcm = resampler ? resampler.process(samples) : samples;
      return format.encoding === 'pcm_s16le' ? bytesOf(pcm.slice()) : g711Encode(format.encoding, pcm);
    };
    const c: Connection = { index, upstream: null, opening: null!, convert, resampler, queued: [], queuedSamples: 0, failed: false };
    c.opening = r.capability.open(r.route, opts.request, abort.signal).then(
      (up) => {
        if (closed || c !== conn) {
          up.close();
          return null;
        }
        c.upstream = up;
        up.listen(heardUncommitted);
        for (const s of c.queued ?? []) up.send(convert(s));
        c.queued = null;
        void up.ended.then((why) => {
          if (c.failed || closed) return;
          c.failed = true;
          opts.log.warn({ route: r.route.id, why: why.message }, 'realtime upstream ended; the next utterance fails over');
        });
        return up;
      },
      (err: unknown) => {
        c.failed = true;
        if (!closed) opts.log.warn({ route: r.route.id, err: (err as Error).message }, 'realtime upstream did not open');
        return null;
      },
    );
    return c;
  };

  /** A fresh socket for an utterance: the routes after the failed one in turn, each sent the utterance's audio. */
  const failover = async (u: Utterance): Promise<RealtimeUpstream> => {
    let last: unknown = null;
    for (let tried = 0; tried < opts.routes.length; tried++) {
      const index = next++;
      if (conn) dispose(conn);
      const c = (conn = connect(index));
      c.queued = null; // what arrives while it opens comes after the utterance: not needed for it
      const up = await c.opening;
      if (up) {
        up.send(c.convert(u.samples()));
        return up;
      }
      last = new UpstreamError('connect', `route ${opts.routes[index % opts.routes.length]!.route.id}: did not open`, true);
    }
    throw last ?? new UpstreamError('config', 'no realtime route', false);
  };

  const dispose = (c: Connection) => {
    c.upstream?.close();
    c.resampler?.destroy();
    c.resampler = null;
  };

  return {
    mode: 'streaming',
    audio(samples) {
      if (closed) return;
      if (!conn) conn = connect(next++);
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
          let up: RealtimeUpstream | null = null;
          if (conn && !conn.failed) up = conn.upstream ?? (await conn.opening);
          if (!up || conn?.failed) up = await failover(u);
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
