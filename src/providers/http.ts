// The shared upstream HTTP client. One undici Agent keeps a keep-alive Pool per upstream origin; the
// composition root builds one UpstreamHttp and passes it to every provider. Upstreams are untrusted:
// every exchange is bounded in time (timeout_ms until the answer's headers, or until the whole body
// for JSON; an idle timeout between stream bytes and a cap on a stream's duration) and in bytes
// (response size, SSE line and event size, stream size). Errors are UpstreamErrors whose messages
// name the route id, never the upstream URL or key (undici's own messages carry the address).
//
// What it builds on, each in its own file: upstream-errors.ts classifies failures (and scrubs an
// upstream's explanation), sse.ts reads event streams, body.ts reads bounded bodies and closes
// unread ones.
import type { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { UpstreamError, type ResolvedRoute } from './types.ts';
import { parseJson, protocolError } from './validate.ts';
import { Cancel, type CancelSignal, waitedOn } from './cancel.ts';
import { discard, readBounded } from './body.ts';
import { readSse, type SseMessage } from './sse.ts';
import { abortedError, networkError, statusError } from './upstream-errors.ts';

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
    let text: string;
    const sent = performance.now();
    try {
      res = await this.#send(call, ex, 'application/json');
      if (res.statusCode < 200 || res.statusCode > 299) throw await this.#statusError(call, res);
      text = await readBounded(res, maxBytes, call.routeId, true);
    } catch (err) {
      if (res) discard(res.body);
      throw ex.error(err);
    } finally {
      // The wait ends with the answer's last byte: parsing it is the gateway's work.
      waitedOn(call.signal, performance.now() - sent);
      ex.detach();
    }
    try {
      return parseJson(text);
    } catch {
      throw protocolError(call.routeId, 'the answer is not JSON or nests too deep');
    }
  }

  /**
   * POSTs JSON asking for an event stream. Resolves once a 2xx `text/event-stream` answer's
   * headers arrived; the iterable then yields events and throws UpstreamError on a failure. The
   * caller's signal aborts the request at any point; leaving the loop early releases the socket.
   */
  async openSse(call: UpstreamCall): Promise<AsyncIterable<SseMessage>> {
    const { res, ex } = await this.#accepted(call, 'text/event-stream', (type) =>
      type === undefined || type.includes('text/event-stream') ? null : 'expected an event stream',
    );
    return this.#events(res.body, call, ex);
  }

  /**
   * POSTs JSON asking for a binary answer (audio). Resolves once a 2xx answer's headers arrived
   * (a JSON or text answer is a protocol failure), with its content type (lower case, without
   * parameters); `body` then yields its bytes as they
   * arrive, at most `maxStreamBytes` in all, and throws UpstreamError on a failure. The caller's
   * signal aborts it at any point; leaving the loop early releases the socket.
   */
  async openBytes(call: UpstreamCall, accept: string): Promise<{ contentType: string; body: AsyncIterable<Buffer> }> {
    const { res, ex } = await this.#accepted(call, accept, (type) =>
      type?.startsWith('application/json') || type?.startsWith('text/') ? `expected binary data, got ${type}` : null,
    );
    const type = res.headers['content-type'];
    const max = this.limits.maxStreamBytes;
    async function* body(): AsyncGenerator<Buffer> {
      let total = 0;
      try {
        // The wait for each chunk is the upstream's; the time the consumer holds it is not.
        let asked = performance.now();
        for await (const chunk of res.body as AsyncIterable<Buffer>) {
          waitedOn(call.signal, performance.now() - asked);
          total += chunk.length;
          if (total > max) throw protocolError(call.routeId, `the answer exceeds ${max} bytes`);
          yield chunk;
          asked = performance.now();
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
  async #accepted(
    call: UpstreamCall,
    accept: string,
    refuse: (type: string | undefined) => string | null,
  ): Promise<{ res: Dispatcher.ResponseData; ex: Exchange }> {
    if (call.signal.aborted) throw abortedError(call.routeId);
    const ex = new Exchange(call);
    let res: Dispatcher.ResponseData | undefined;
    const sent = performance.now();
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
    } finally {
      waitedOn(call.signal, performance.now() - sent);
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

  async *#events(body: Readable, call: UpstreamCall, ex: Exchange): AsyncGenerator<SseMessage> {
    try {
      yield* readSse(body, {
        routeId: call.routeId,
        waits: call.signal,
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

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
