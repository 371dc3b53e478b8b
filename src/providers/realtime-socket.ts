// What the three realtime protocols share (src/providers/<vendor>/realtime.ts): a WebSocket to the
// route's base_url (http → ws, https → wss), bounded connect and handshake, refusals mapped to
// UpstreamError as the router reads them (401/403/404 `config`, 429/5xx `http`, connect and
// timeout), upstream JSON parsed with its depth checked, and commits in order: `commit` sends the
// protocol's end-of-utterance message at once and answers the text the protocol sends back for it
// (several may be pending; answers come in commit order, the oldest pending first). What a protocol
// hears before an answer (deltas, partial hypotheses) goes to the oldest pending commit, or, when
// none is pending, to the audio not yet committed (`open`, reported to `listen`'s callback): the
// upstreams process audio in order, so a result for later audio never comes before an earlier answer.
// The upstream closing or failing ends every pending commit at once with the reason, and `ended`
// resolves: the session above reports it (an error frame) or fails over before the next utterance.
import WebSocket from 'ws';
import { routeUrl } from './http.ts';
import type { ResolvedRoute } from './types.ts';
import {
  UpstreamError,
  type Heard,
  type RealtimeAudioFormat,
  type RealtimeOpenRequest,
  type RealtimeTurn,
  type RealtimeUpstream,
  type RecognitionContext,
} from './types.ts';
import { isObject, parseJson, type Json } from './validate.ts';

/** Largest upstream frame taken (transcripts are small). */
const MAX_UPSTREAM_FRAME = 1 << 20;
/** Connect, handshake and the protocol's ready message, at most (the route's timeout when smaller). */
const MAX_OPEN_MS = 10_000;

export interface ProtocolHandlers {
  /** A JSON frame from the upstream. `turns`: the pending commits, oldest first; `up.current()`: where text heard now goes. */
  message(msg: Json, turns: readonly PendingTurn[], up: UpstreamSocket): void;
  /** Sends audio in the protocol's way. */
  audio(bytes: Uint8Array, up: UpstreamSocket): void;
  /** Sends the protocol's end-of-utterance message. */
  commit(up: UpstreamSocket): void;
  /** Sent before closing (a polite goodbye), if the protocol has one. */
  goodbye?(up: UpstreamSocket): void;
  /** A new context for the audio from now on, where the protocol can change it on an open socket. */
  configure?(context: RecognitionContext | undefined, up: UpstreamSocket): void;
}

/** What is heard of one turn's audio: a pending commit's, or the audio not yet committed. */
export interface HeardText {
  /** Appendable text (OpenAI's deltas). */
  delta(text: string): void;
  /** The turn's whole text so far, replacing the previous partial; `settled`: its words are final. */
  partial(text: string, settled?: boolean): void;
  /** Text of final pieces gathered so far (protocols that send several finals per turn); moved to the commit that ends it. */
  parts: string[];
}

export interface PendingTurn extends HeardText {
  finish(turn: RealtimeTurn): void;
  fail(err: UpstreamError): void;
  /** The upstream's id for this commit, once it said (OpenAI's item_id). */
  id: string | null;
}

const heardText = (emit: (h: Heard) => void, parts: string[] = []): HeardText => ({
  parts,
  delta: (text) => emit({ kind: 'delta', text }),
  partial: (text, settled = false) => emit({ kind: 'partial', text, settled }),
});

export interface OpenOptions {
  route: ResolvedRoute;
  /** The path under the route's base_url, with its query. */
  path: string;
  query: Record<string, string> | URLSearchParams;
  headers: Record<string, string>;
  format: RealtimeAudioFormat;
  signal: AbortSignal;
  handlers: ProtocolHandlers;
  /** Resolves the open once this message arrives (the protocol's "session ready"); none: at the handshake. */
  ready?(msg: Json): boolean;
}

export class UpstreamSocket implements RealtimeUpstream {
  readonly ended: Promise<UpstreamError>;
  private end!: (err: UpstreamError) => void;
  private readonly turns: PendingTurn[] = [];
  private done = false;
  private listener: ((h: Heard) => void) | null = null;
  /** What is heard of the audio not yet committed. */
  private readonly open: HeardText = heardText((h) => this.listener?.(h));

  constructor(
    private readonly ws: WebSocket,
    readonly format: RealtimeAudioFormat,
    private readonly routeId: string,
    private readonly handlers: ProtocolHandlers,
  ) {
    this.ended = new Promise((resolve) => (this.end = resolve));
  }

  sendJson(msg: object): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  sendBinary(bytes: Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(bytes);
  }

  send(audio: Uint8Array): void {
    if (!this.done) this.handlers.audio(audio, this);
  }

  listen(onHeard: (h: Heard) => void): void {
    this.listener = onHeard;
  }

  configure(context: RecognitionContext | undefined): void {
    if (!this.done) this.handlers.configure?.(context, this);
  }

  /** Where text heard now belongs: the oldest pending commit, else the audio not yet committed. */
  current(): HeardText {
    return this.turns[0] ?? this.open;
  }

  commit(signal: AbortSignal, onHeard: (h: Heard) => void): Promise<RealtimeTurn> {
    if (this.done) return Promise.reject(new UpstreamError('connect', `route ${this.routeId}: the realtime upstream is closed`, true));
    return new Promise<RealtimeTurn>((resolve, reject) => {
      const onAbort = () => settle(() => reject(signal.reason));
      const settle = (fn: () => void) => {
        const at = this.turns.indexOf(turn);
        if (at < 0) return;
        this.turns.splice(at, 1);
        signal.removeEventListener('abort', onAbort);
        fn();
      };
      // The commit ends the audio heard so far: its settled pieces are this turn's.
      const heard = heardText((h) => this.turns.includes(turn) && onHeard(h), this.open.parts.splice(0));
      const turn: PendingTurn = {
        ...heard,
        id: null,
        finish: (t) => settle(() => resolve(t)),
        fail: (err) => settle(() => reject(err)),
      };
      this.turns.push(turn);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      this.handlers.commit(this);
    });
  }

  private failAll(err: UpstreamError): void {
    for (const t of [...this.turns]) t.fail(err);
  }

  /** The upstream failed (a protocol error, a fatal error message): the pending commit with it, and the socket closes. */
  fail(err: UpstreamError): void {
    if (this.done) return;
    this.done = true;
    this.failAll(err);
    this.end(err);
    this.ws.terminate();
  }

  close(): void {
    if (this.done) return;
    this.done = true;
    const err = new UpstreamError('aborted', `route ${this.routeId}: closed by the gateway`, false);
    this.failAll(err);
    this.end(err);
    if (this.ws.readyState === WebSocket.OPEN) {
      this.handlers.goodbye?.(this);
      this.ws.close(1000);
      setTimeout(() => this.ws.terminate(), 2000).unref();
    } else this.ws.terminate();
  }

  /** Wired by openUpstreamSocket. */
  onFrame(text: string): void {
    let msg: unknown;
    try {
      msg = parseJson(text);
    } catch {
      return this.fail(new UpstreamError('protocol', `route ${this.routeId}: the realtime upstream sent a frame that is not JSON`, true));
    }
    if (!isObject(msg))
      return this.fail(new UpstreamError('protocol', `route ${this.routeId}: the realtime upstream sent a frame that is not a JSON object`, true));
    this.handlers.message(msg, this.turns, this);
  }

  onClose(code: number): void {
    this.fail(new UpstreamError('connect', `route ${this.routeId}: the realtime upstream closed the connection (${code})`, true));
  }
}

/** A refusal of the upgrade as the router classifies HTTP answers. */
function refusalError(routeId: string, status: number): UpstreamError {
  if (status === 401 || status === 402 || status === 403 || status === 404 || status === 405)
    return new UpstreamError('config', `route ${routeId}: the realtime upstream refused the connection (${status})`, false, status);
  if (status === 400 || status === 422)
    return new UpstreamError('client', `route ${routeId}: the realtime upstream refused the session (${status})`, false, status);
  return new UpstreamError('http', `route ${routeId}: the realtime upstream answered ${status}`, true, status);
}

/** Connects, and resolves once the upstream is ready for audio (or rejects with an UpstreamError). */
export function openUpstreamSocket(opts: OpenOptions): Promise<UpstreamSocket> {
  const { route } = opts;
  const url = new URL(routeUrl(route, opts.path)); // routeUrl's URL is shared between calls: changed on a copy
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  // URLSearchParams keeps repeated names (Deepgram's `keyterm`); a record sets each name once.
  for (const [k, v] of opts.query instanceof URLSearchParams ? opts.query : Object.entries(opts.query)) url.searchParams.append(k, v);
  const timeoutMs = Math.min(route.timeoutMs, MAX_OPEN_MS);
  return new Promise<UpstreamSocket>((resolve, reject) => {
    if (opts.signal.aborted) return reject(new UpstreamError('aborted', `route ${route.id}: the caller went away`, false));
    const ws = new WebSocket(url, {
      headers: opts.headers,
      handshakeTimeout: timeoutMs,
      maxPayload: MAX_UPSTREAM_FRAME,
      perMessageDeflate: false,
      followRedirects: false,
    });
    const up = new UpstreamSocket(ws, opts.format, route.id, opts.handlers);
    let opened = false;
    const timer = setTimeout(
      () => fail(new UpstreamError('timeout', `route ${route.id}: the realtime upstream was not ready within ${timeoutMs} ms`, true)),
      timeoutMs,
    );
    const onAbort = () => fail(new UpstreamError('aborted', `route ${route.id}: the caller went away`, false));
    opts.signal.addEventListener('abort', onAbort, { once: true });
    const fail = (err: UpstreamError) => {
      if (opened) return;
      opened = true;
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      up.fail(err);
      reject(err);
    };
    const ready = () => {
      if (opened) return;
      opened = true;
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      resolve(up);
    };
    ws.on('unexpected-response', (_req, res) => {
      res.resume();
      fail(refusalError(route.id, res.statusCode ?? 0));
    });
    ws.on('error', (err) =>
      opened
        ? up.fail(new UpstreamError('connect', `route ${route.id}: ${err.message}`, true))
        : fail(new UpstreamError('connect', `route ${route.id}: could not connect (${err.message})`, true)),
    );
    ws.on('open', () => {
      if (!opts.ready) ready();
    });
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      const text = String(data);
      if (!opened && opts.ready) {
        try {
          const msg = parseJson(text);
          if (isObject(msg) && opts.ready(msg)) return ready();
        } catch {
          /* handled below */
        }
      }
      up.onFrame(text);
    });
    ws.on('close', (code) =>
      opened ? up.onClose(code) : fail(new UpstreamError('connect', `route ${route.id}: the realtime upstream closed before it was ready (${code})`, true)),
    );
  });
}

/** An upstream's error message: a failure of the pending commit, or of the whole socket when fatal. */
export function upstreamErrorMessage(routeId: string, message: unknown): UpstreamError {
  const text = typeof message === 'string' ? message.slice(0, 200) : 'an error';
  return new UpstreamError('http', `route ${routeId}: the realtime upstream reported ${text}`, true);
}

/** For upstreams that take G.711 natively: μ-law and A-law as the client sent them, else 16-bit PCM, at the socket's rate. */
export function nativeFormat(req: RealtimeOpenRequest): RealtimeAudioFormat {
  return { encoding: req.encoding === 'mulaw' || req.encoding === 'alaw' ? req.encoding : 'pcm_s16le', sampleRate: req.sampleRate };
}

/** Sarvam's and Deepgram's names of those encodings. */
export const NATIVE_ENCODING_NAMES = { mulaw: 'mulaw', alaw: 'alaw', pcm_s16le: 'linear16' } as const;

export const base64Of = (bytes: Uint8Array): string => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
