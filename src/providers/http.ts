// The shared upstream HTTP client. One undici Agent keeps a keep-alive Pool per upstream origin; the
// composition root builds one UpstreamHttp and passes it to every provider. Upstreams are untrusted:
// every exchange is bounded in time (timeout_ms until the answer's headers, or until the whole body
// for JSON; an idle timeout between stream bytes and a cap on a stream's duration) and in bytes
// (response size, SSE line and event size, stream size). Errors are UpstreamErrors whose messages
// name the route id, never the upstream URL or key (undici's own messages carry the address).
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { UpstreamError, type ResolvedRoute } from './types.ts';
import { isObject, parseJson, protocolError } from './validate.ts';
import { Cancel, type CancelSignal } from './cancel.ts';

export interface UpstreamLimits {
  /** A JSON (non-streamed) answer; embeddings of large batches are the big ones. */
  maxResponseBytes: number;
  /** How much of an error answer is read to explain it. */
  maxErrorBodyBytes: number;
  /** A whole event stream. */
  maxStreamBytes: number;
  /** One SSE line, and the data of one event. */
  maxSseLineBytes: number;
  /** Silence allowed between stream bytes, including before the first event. */
  streamIdleTimeoutMs: number;
  /** A stream's whole life, so a slow drip cannot hold a connection forever. */
  maxStreamMs: number;
}

export const DEFAULT_LIMITS: UpstreamLimits = {
  maxResponseBytes: 32 << 20,
  maxErrorBodyBytes: 64 << 10,
  maxStreamBytes: 64 << 20,
  maxSseLineBytes: 1 << 20,
  streamIdleTimeoutMs: 60_000,
  maxStreamMs: 30 * 60_000,
};

export interface UpstreamHttpOptions extends Partial<UpstreamLimits> {
  /** Sockets per upstream origin; further requests wait in undici's queue (inside timeout_ms). */
  connectionsPerOrigin?: number;
  keepAliveTimeoutMs?: number;
  connectTimeoutMs?: number;
}

export interface UpstreamCall {
  /** Names the route in error messages. */
  routeId: string;
  url: URL;
  headers: Record<string, string>;
  /** Serialised as JSON. */
  body: unknown;
  /** Until the headers for a stream; until the whole body for JSON. */
  timeoutMs: number;
  signal: CancelSignal;
  /** Strings to scrub from an upstream's explanation before it may reach a client (the key). */
  secrets?: string[];
}

/** One SSE event with parsed JSON data, or the OpenAI `[DONE]` terminator. */
export type SseMessage = { type: 'event'; event: string; data: unknown } | { type: 'done' };

export function abortedError(routeId: string): UpstreamError {
  return new UpstreamError('aborted', `route ${routeId}: the caller went away`, false);
}

/** A base_url when it is an http(s) URL without credentials, else null. */
export function usableBaseUrl(baseUrl: string): URL | null {
  try {
    const url = new URL(baseUrl);
    return (url.protocol === 'http:' || url.protocol === 'https:') && !url.username && !url.password ? url : null;
  } catch {
    return null;
  }
}

/**
 * The URL of `path` under the route's base_url ('' for base_url itself), parsed once per route
 * (2 µs a call otherwise; RouteResolver reuses routes for every call of a model version) and
 * shared between its calls: never mutate it. Null when base_url is not usable.
 */
function routeUrlOrNull(route: ResolvedRoute, path: string): URL | null {
  const urls = (route.urls ??= new Map());
  let url = urls.get(path);
  if (url === undefined) {
    url = usableBaseUrl(route.baseUrl);
    if (url && path) {
      url.pathname = url.pathname.replace(/\/+$/, '') + path;
      url.hash = '';
    }
    urls.set(path, url);
  }
  return url;
}

/**
 * The URL of `path` under the route's base_url (`https://api.openai.com/v1` + `/chat/completions`).
 * A route resolveRoutes flagged, or a base_url that is not plain http(s), is a config failure.
 * The URL is shared between calls: never mutate it.
 */
export function routeUrl(route: ResolvedRoute, path: string): URL {
  if (route.problem) throw new UpstreamError('config', `route ${route.id} is misconfigured`, false);
  const url = routeUrlOrNull(route, path);
  if (!url) throw new UpstreamError('config', `route ${route.id}: base_url must be an http(s) URL without credentials`, false);
  return url;
}

/** The host a route calls, or null when its base_url is not usable. */
export function routeHost(route: ResolvedRoute): string | null {
  return routeUrlOrNull(route, '')?.hostname ?? null;
}

export class UpstreamHttp {
  readonly limits: UpstreamLimits;
  readonly #agent: Agent;

  constructor(opts: UpstreamHttpOptions = {}) {
    const { connectionsPerOrigin = 256, keepAliveTimeoutMs = 30_000, connectTimeoutMs = 10_000, ...limits } = opts;
    this.limits = { ...DEFAULT_LIMITS, ...definedOnly(limits) };
    this.#agent = new Agent({
      connections: connectionsPerOrigin,
      keepAliveTimeout: keepAliveTimeoutMs,
      connect: { timeout: connectTimeoutMs },
      maxOrigins: 1024,
    });
  }

  /** POSTs JSON and returns the parsed 2xx answer; anything else throws UpstreamError. */
  async postJson(call: UpstreamCall, maxBytes = this.limits.maxResponseBytes): Promise<unknown> {
    if (call.signal.aborted) throw abortedError(call.routeId);
    const ex = new Exchange(call);
    let res: Dispatcher.ResponseData | undefined;
    try {
      res = await this.#send(call, ex, 'application/json');
      if (res.statusCode < 200 || res.statusCode > 299) throw await this.#statusError(call, res);
      const text = await readBounded(res, maxBytes, call.routeId, true);
      try {
        return parseJson(text);
      } catch {
        throw protocolError(call.routeId, 'the answer is not JSON or nests too deep');
      }
    } catch (err) {
      if (res) discard(res.body);
      throw ex.error(err);
    } finally {
      ex.detach();
    }
  }

  /**
   * POSTs JSON asking for an event stream. Resolves once a 2xx `text/event-stream` answer's
   * headers arrived; the iterable then yields events and throws UpstreamError on a failure. The
   * caller's signal aborts the request at any point; leaving the loop early releases the socket.
   */
  async openSse(call: UpstreamCall): Promise<AsyncIterable<SseMessage>> {
    const { res, ex } = await this.#accepted(call, 'text/event-stream', (type) => type === undefined || type.includes('text/event-stream') ? null : 'expected an event stream');
    return this.#events(res.body, call.routeId, ex);
  }

  /**
   * POSTs JSON asking for a binary answer (audio). Resolves once a 2xx answer's headers arrived
   * (a JSON or text answer is a protocol failure), with its content type (lower case, without
   * parameters); `body` then yields its bytes as they
   * arrive, at most `maxStreamBytes` in all, and throws UpstreamError on a failure. The caller's
   * signal aborts it at any point; leaving the loop early releases the socket.
   */
  async openBytes(call: UpstreamCall, accept: string): Promise<{ contentType: string; body: AsyncIterable<Buffer> }> {
    const { res, ex } = await this.#accepted(call, accept, (type) => (type?.startsWith('application/json') || type?.startsWith('text/') ? `expected binary data, got ${type}` : null));
    const type = res.headers['content-type'];
    const max = this.limits.maxStreamBytes;
    async function* body(): AsyncGenerator<Buffer> {
      let total = 0;
      try {
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          total += chunk.length;
          if (total > max) throw protocolError(call.routeId, `the answer exceeds ${max} bytes`);
          yield chunk;
        }
      } catch (err) {
        throw ex.error(err);
      } finally {
        if (!res.body.readableEnded) res.body.destroy();
        ex.detach();
      }
    }
    return { contentType: typeof type === 'string' ? type.split(';')[0]!.trim().toLowerCase() : '', body: body() };
  }

  /** Sends the call and waits for a 2xx answer whose content type `refuse` accepts (it names what is wrong, or null). */
  async #accepted(call: UpstreamCall, accept: string, refuse: (type: string | undefined) => string | null): Promise<{ res: Dispatcher.ResponseData; ex: Exchange }> {
    if (call.signal.aborted) throw abortedError(call.routeId);
    const ex = new Exchange(call);
    let res: Dispatcher.ResponseData | undefined;
    try {
      res = await this.#send(call, ex, accept);
      if (res.statusCode < 200 || res.statusCode > 299) throw await this.#statusError(call, res);
      const type = res.headers['content-type'];
      const wrong = refuse(typeof type === 'string' ? type.toLowerCase() : undefined);
      if (wrong) throw protocolError(call.routeId, wrong);
      ex.stopTimer();
      return { res, ex };
    } catch (err) {
      if (res) discard(res.body);
      ex.detach();
      throw ex.error(err);
    }
  }

  /** Waits for in-flight requests (streams included), then closes every pooled connection. */
  close(): Promise<void> {
    return this.#agent.close();
  }

  /** Ends in-flight requests at once (their callers see connect failures) and closes every connection. */
  destroy(): Promise<void> {
    return this.#agent.destroy();
  }

  async *#events(body: Readable, routeId: string, ex: Exchange): AsyncGenerator<SseMessage> {
    try {
      yield* readSse(body, {
        routeId,
        maxLineBytes: this.limits.maxSseLineBytes,
        maxBytes: this.limits.maxStreamBytes,
        idleTimeoutMs: this.limits.streamIdleTimeoutMs,
        maxDurationMs: this.limits.maxStreamMs,
      });
    } catch (err) {
      throw ex.error(err);
    } finally {
      ex.detach();
    }
  }

  #send(call: UpstreamCall, ex: Exchange, accept: string): Promise<Dispatcher.ResponseData> {
    return this.#agent.request({
      origin: call.url.origin,
      path: call.url.pathname + call.url.search,
      method: 'POST',
      headers: { ...call.headers, 'content-type': 'application/json', accept },
      body: JSON.stringify(call.body),
      signal: ex.cancel,
      // Backstops only: our own timers fire first and classify the failure.
      headersTimeout: call.timeoutMs + 1000,
      bodyTimeout: this.limits.streamIdleTimeoutMs + 1000,
    });
  }

  async #statusError(call: UpstreamCall, res: Dispatcher.ResponseData): Promise<UpstreamError> {
    let text = '';
    try {
      text = await readBounded(res, this.limits.maxErrorBodyBytes, call.routeId, false);
    } catch {
      // The status alone classifies the failure.
    }
    return statusError(call.routeId, res.statusCode, text, [...(call.secrets ?? []), call.url.host]);
  }
}

/**
 * One request's timer and its link to the caller's signal, so a failure is classified as what
 * caused it (our timeout, the caller leaving, or the network) rather than as undici reports it.
 */
class Exchange {
  /** Given to undici as the request's signal. */
  readonly cancel = new Cancel();
  readonly #timer: NodeJS.Timeout;
  #timedOut = false;
  readonly #onAbort = (): void => this.cancel.abort(this.call.signal.reason);

  constructor(readonly call: UpstreamCall) {
    call.signal.addEventListener('abort', this.#onAbort, { once: true });
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.cancel.abort(new Error('upstream timeout'));
    }, call.timeoutMs).unref();
  }

  stopTimer(): void {
    clearTimeout(this.#timer);
  }

  detach(): void {
    clearTimeout(this.#timer);
    this.call.signal.removeEventListener('abort', this.#onAbort);
  }

  error(err: unknown): UpstreamError {
    if (err instanceof UpstreamError) return err;
    const id = this.call.routeId;
    if (this.#timedOut) return new UpstreamError('timeout', `route ${id}: no answer within ${this.call.timeoutMs} ms`, true);
    if (this.call.signal.aborted) return abortedError(id);
    return networkError(id, err);
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);

/** undici's and the OS's errors name the address; only their code is kept. */
export function networkError(routeId: string, err: unknown): UpstreamError {
  const raw = isObject(err) || err instanceof Error ? (err as { code?: unknown }).code : undefined;
  const code = typeof raw === 'string' && /^[A-Z0-9_]{1,40}$/.test(raw) ? raw : 'unknown';
  if (TIMEOUT_CODES.has(code)) return new UpstreamError('timeout', `route ${routeId}: upstream timed out (${code})`, true);
  if (code === 'UND_ERR_INVALID_ARG') return new UpstreamError('config', `route ${routeId}: request rejected by the HTTP client`, false);
  return new UpstreamError('connect', `route ${routeId}: connection failed (${code})`, true);
}

/**
 * Classifies a non-2xx answer. 400/413/422 are about the request (client); 408/409/425/429 and 5xx
 * may pass (http, retryable); any other 3xx/4xx (401, 402, 403, 404, 405, a redirect: undici does
 * not follow them) means the route cannot work as configured.
 */
export function statusError(routeId: string, status: number, body: string, secrets: string[]): UpstreamError {
  const said = explanation(body);
  const upstreamMessage = said === undefined ? undefined : scrub(said, secrets);
  if (status === 400 || status === 413 || status === 422) {
    return new UpstreamError('client', `route ${routeId}: upstream rejected the request (${status})`, false, status, upstreamMessage);
  }
  if (status === 408 || status === 409 || status === 425 || status === 429 || status >= 500) {
    return new UpstreamError('http', `route ${routeId}: upstream answered ${status}`, true, status, upstreamMessage);
  }
  if (status >= 300) {
    return new UpstreamError('config', `route ${routeId}: upstream refused the route's configuration (${status})`, false, status, upstreamMessage);
  }
  return new UpstreamError('protocol', `route ${routeId}: unexpected upstream status ${status}`, true, status);
}

/**
 * The message in an OpenAI, Anthropic, Sarvam, vLLM or FastAPI error body, or ElevenLabs'
 * `{detail: {status, message}}`; plain text and HTML are ignored.
 */
function explanation(body: string): string | undefined {
  let json: unknown;
  try {
    json = parseJson(body);
  } catch {
    return undefined;
  }
  if (!isObject(json)) return undefined;
  const { error, message, detail } = json;
  if (isObject(error) && typeof error.message === 'string') return error.message;
  if (isObject(detail) && typeof detail.message === 'string') return detail.message;
  for (const v of [error, message, detail]) if (typeof v === 'string') return v;
  return undefined;
}

const MAX_EXPLANATION = 300;

/** Makes an upstream's text safe to show a client: no URLs, addresses, keys or control characters. */
export function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  out = out
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]')
    .replace(/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, '[address]')
    .replace(/\b(?:sk|key|api)[-_][A-Za-z0-9_-]{6,}/gi, '[redacted]')
    .trim();
  return out.length > MAX_EXPLANATION ? `${out.slice(0, MAX_EXPLANATION)}…` : out;
}

/**
 * Reads a body up to `max` bytes: over it, `strict` fails; otherwise what fit is kept. (Listeners,
 * not `for await`: the async iterator cost 4.5 µs per call in the chat profile.)
 */
function readBounded(res: Dispatcher.ResponseData, max: number, routeId: string, strict: boolean): Promise<string> {
  const tooBig = (): UpstreamError => protocolError(routeId, `the answer exceeds ${max} bytes`);
  const body = res.body;
  const declared = Number(res.headers['content-length']);
  if (strict && Number.isFinite(declared) && declared > max) {
    discard(body);
    return Promise.reject(tooBig());
  }
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const stop = (): void => {
      body.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
    };
    const onData = (buf: Buffer): void => {
      if (size + buf.length > max) {
        stop();
        discard(body);
        if (strict) return reject(tooBig());
        parts.push(buf.subarray(0, max - size));
        return resolve(Buffer.concat(parts).toString('utf8'));
      }
      parts.push(buf);
      size += buf.length;
    };
    const onEnd = (): void => {
      stop();
      resolve(Buffer.concat(parts, size).toString('utf8'));
    };
    const onError = (err: Error): void => {
      stop();
      reject(err);
    };
    // Destroyed without an error (and so without 'end'): the answer was cut short.
    const onClose = (): void => {
      stop();
      reject(Object.assign(new Error('the answer ended before it was complete'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    };
    body.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

export interface SseOptions {
  routeId: string;
  maxLineBytes: number;
  maxBytes: number;
  idleTimeoutMs: number;
  maxDurationMs: number;
}

const LF = 10;
const CR = 13;

/**
 * Reads Server-Sent Events from a Node stream: `data:` lines (several join with "\n"), `event:`
 * names, comments, LF/CRLF/CR line ends split anywhere across chunks, a leading BOM. Each event's
 * data is parsed as JSON; `[DONE]` yields `{type: 'done'}` and ends the stream. Throws
 * UpstreamError 'protocol' for a line or event over `maxLineBytes`, a stream over `maxBytes` or
 * data that is not JSON, and 'timeout' after `idleTimeoutMs` without bytes while the reader waits
 * (a slow consumer is not the upstream's fault) or after `maxDurationMs` in all. An event cut off
 * by the end of the stream is dropped, as the SSE specification says.
 */
export async function* readSse(body: Readable, opts: SseOptions): AsyncGenerator<SseMessage> {
  const { routeId, maxLineBytes } = opts;
  const fail = (err: UpstreamError): void => void body.destroy(err);
  let waiting = false;
  const idle = setTimeout(() => {
    if (waiting) fail(new UpstreamError('timeout', `route ${routeId}: stream idle for ${opts.idleTimeoutMs} ms`, true));
  }, opts.idleTimeoutMs);
  const deadline = setTimeout(
    () => fail(new UpstreamError('timeout', `route ${routeId}: stream exceeded ${opts.maxDurationMs} ms`, true)),
    opts.maxDurationMs,
  ).unref();
  const chunks = body.iterator({ destroyOnReturn: false }) as AsyncIterator<Buffer | string>;
  let clean = true;
  let total = 0;

  let pending: Buffer[] = [];
  let pendingLen = 0;
  let skipLF = false;
  let firstLine = true;
  let event = '';
  let data: string[] = [];
  let dataLen = 0;

  // Returns the message an empty line dispatches, if any.
  const onLine = (raw: string): SseMessage | null => {
    let line = raw;
    if (firstLine) {
      firstLine = false;
      if (line.charCodeAt(0) === 0xfeff) line = line.slice(1);
    }
    if (line === '') {
      if (data.length === 0) {
        event = '';
        return null;
      }
      const text = data.join('\n');
      const name = event || 'message';
      event = '';
      data = [];
      dataLen = 0;
      if (text === '[DONE]') return { type: 'done' };
      try {
        return { type: 'event', event: name, data: parseJson(text) };
      } catch {
        throw protocolError(routeId, 'an event is not JSON or nests too deep');
      }
    }
    if (line.charCodeAt(0) === 0x3a) return null; // ':' comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    if (field === 'data') {
      dataLen += value.length + 1;
      if (dataLen > maxLineBytes) throw protocolError(routeId, `an event exceeds ${maxLineBytes} bytes`);
      data.push(value);
    } else if (field === 'event') {
      event = value;
    }
    return null;
  };

  try {
    for (;;) {
      waiting = true;
      idle.refresh();
      const next = await chunks.next();
      waiting = false;
      if (next.done) return;
      const chunk = typeof next.value === 'string' ? Buffer.from(next.value) : next.value;
      total += chunk.length;
      if (total > opts.maxBytes) throw protocolError(routeId, `the stream exceeds ${opts.maxBytes} bytes`);

      let pos = 0;
      if (skipLF && chunk.length > 0) {
        if (chunk[0] === LF) pos = 1;
        skipLF = false;
      }
      let nextCR = chunk.indexOf(CR, pos);
      while (pos < chunk.length) {
        if (nextCR >= 0 && nextCR < pos) nextCR = chunk.indexOf(CR, pos);
        const nextLF = chunk.indexOf(LF, pos);
        const end = nextLF < 0 ? nextCR : nextCR < 0 ? nextLF : Math.min(nextLF, nextCR);
        if (end < 0) {
          pendingLen += chunk.length - pos;
          if (pendingLen > maxLineBytes) throw protocolError(routeId, `a line exceeds ${maxLineBytes} bytes`);
          pending.push(chunk.subarray(pos));
          break;
        }
        const piece = chunk.subarray(pos, end);
        if (pendingLen + piece.length > maxLineBytes) throw protocolError(routeId, `a line exceeds ${maxLineBytes} bytes`);
        const line = pendingLen === 0 ? piece.toString('utf8') : Buffer.concat([...pending, piece]).toString('utf8');
        pending = [];
        pendingLen = 0;
        pos = end + 1;
        if (chunk[end] === CR) {
          if (pos < chunk.length) {
            if (chunk[pos] === LF) pos += 1;
          } else {
            skipLF = true;
          }
        }
        const message = onLine(line);
        if (message) {
          yield message;
          if (message.type === 'done') return;
        }
      }
    }
  } catch (err) {
    clean = false;
    throw err;
  } finally {
    clearTimeout(idle);
    clearTimeout(deadline);
    release(body, clean, total);
  }
}

/** How long a stream's remainder may take to arrive after [DONE] before its connection is closed. */
const RELEASE_WAIT_MS = 1000;

/**
 * After a clean end (or a consumer that stopped at an event boundary), reads the little that is
 * left so the keep-alive socket goes back to the pool; after a failure, closes it.
 */
function release(body: Readable, clean: boolean, consumed: number): void {
  if (body.readableEnded || body.destroyed) return;
  const dump = (body as Readable & { dump?: (o: { limit: number; signal: CancelSignal }) => Promise<void> }).dump;
  if (!clean || typeof dump !== 'function') {
    discard(body);
    return;
  }
  // A Cancel and a plain timer, not AbortSignal.timeout: that builds an EventTarget and a tracked
  // timer per stream (~20 µs of a streamed call's CPU in profiles). undici takes any signal-like object.
  const giveUp = new Cancel();
  const timer = setTimeout(() => giveUp.abort(), RELEASE_WAIT_MS);
  dump.call(body, { limit: consumed + (64 << 10), signal: giveUp }).then(
    () => clearTimeout(timer),
    () => {
      clearTimeout(timer);
      discard(body);
    },
  );
}

/** Closes a body nobody will read. undici errors an unread body it destroys: nobody listens for that. */
function discard(body: Readable): void {
  if (body.listenerCount('error') === 0) body.on('error', () => {});
  body.destroy();
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
