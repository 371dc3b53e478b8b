// Upstream calls that carry or fetch files: a multipart form with the audio (OpenAI, Sarvam), the
// audio as the whole body (Deepgram), a PUT of the audio to a storage URL a provider handed out
// (Sarvam's blob upload), and GETs of job status and results. The conventions are http.ts's: one
// timer for the whole exchange (route.timeoutMs: upload, processing and answer), the caller's
// signal aborts at any point (the file stream is closed with the request), answers are bounded in
// bytes and nesting, and every failure is an UpstreamError classified as http.ts's are
// (upstream-errors.ts: statusError, networkError), naming the route id, never a URL, key or storage signature.
//
// Audio calls get their own undici Agent: uploads are long and large, and keeping them off the pool
// the chat path uses keeps a burst of jobs from holding its sockets.
import { Readable } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { DEFAULT_LIMITS, type UpstreamCall } from './http.ts';
import { discard } from './body.ts';
import { abortedError, networkError, scrub, statusError } from './upstream-errors.ts';
import { Cancel, waitedOn } from './cancel.ts';
import { fileBody, multipartBody, type MultipartFile, type StreamedBody } from './multipart.ts';
import { UpstreamError } from './types.ts';
import { addressRange, isLocalName } from '../shared/address.ts';
import { parseJson, protocolError } from './validate.ts';

/** What a file call sends: a form with one file, a file as the body, JSON, or nothing (GET). */
export type Payload =
  | { type: 'multipart'; fields: readonly (readonly [string, string])[]; file: MultipartFile }
  | { type: 'file'; path: string; contentType: string; data?: Uint8Array | undefined }
  | { type: 'json'; value: unknown }
  | { type: 'none' };

export interface FileCall extends Omit<UpstreamCall, 'body'> {
  method: 'GET' | 'POST' | 'PUT';
  payload: Payload;
  /**
   * The upstream's explanation in an error body whose shape statusError does not read (Deepgram's
   * `err_msg`); scrubbed before use.
   */
  explain?: (body: string) => string | undefined;
}

export interface UpstreamFilesOptions {
  connectionsPerOrigin?: number;
  keepAliveTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** A JSON answer (a long recording's transcript is the big one). */
  maxResponseBytes?: number;
  /** How much of an error answer is read to explain it. */
  maxErrorBodyBytes?: number;
}

export class UpstreamFiles {
  readonly #agent: Agent;
  readonly #maxResponseBytes: number;
  readonly #maxErrorBodyBytes: number;

  constructor(opts: UpstreamFilesOptions = {}) {
    this.#agent = new Agent({
      connections: opts.connectionsPerOrigin ?? 64,
      keepAliveTimeout: opts.keepAliveTimeoutMs ?? 30_000,
      connect: { timeout: opts.connectTimeoutMs ?? 10_000 },
      maxOrigins: 1024,
    });
    this.#maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_LIMITS.maxResponseBytes;
    this.#maxErrorBodyBytes = opts.maxErrorBodyBytes ?? DEFAULT_LIMITS.maxErrorBodyBytes;
  }

  /** Sends the call and returns its parsed 2xx JSON answer. */
  json(call: FileCall): Promise<unknown> {
    return this.#exchange(call, 'application/json', async (res) => {
      const text = await readText(res.body, this.#maxResponseBytes, call.routeId, true);
      try {
        return parseJson(text);
      } catch {
        throw protocolError(call.routeId, 'the answer is not JSON or nests too deep');
      }
    });
  }

  /** Sends the call and checks for a 2xx; the answer's body is read (bounded) and dropped. */
  send(call: FileCall): Promise<void> {
    return this.#exchange(call, '*/*', async (res) => {
      await readText(res.body, this.#maxErrorBodyBytes, call.routeId, false);
    });
  }

  /** Waits for calls in flight, then closes every pooled connection. */
  close(): Promise<void> {
    return this.#agent.close();
  }

  destroy(): Promise<void> {
    return this.#agent.destroy();
  }

  async #exchange<T>(call: FileCall, accept: string, read: (res: Dispatcher.ResponseData) => Promise<T>): Promise<T> {
    const id = call.routeId;
    if (call.signal.aborted) throw abortedError(id);
    // Opened before the timer starts: a missing local file is our failure, not the upstream's.
    const body = await payloadBody(call.payload);
    const cancel = new Cancel();
    const onAbort = (): void => cancel.abort(call.signal.reason);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      cancel.abort(new Error('upstream timeout'));
    }, call.timeoutMs).unref();
    call.signal.addEventListener('abort', onAbort, { once: true });
    let res: Dispatcher.ResponseData | undefined;
    const sent = performance.now();
    try {
      res = await this.#agent.request({
        origin: call.url.origin,
        path: call.url.pathname + call.url.search,
        method: call.method,
        headers: {
          ...call.headers,
          accept,
          ...(body ? { 'content-type': body.contentType, 'content-length': String(body.length) } : {}),
        },
        body: body?.stream ?? null,
        signal: cancel,
        // Backstops only: our own timer fires first and classifies the failure.
        headersTimeout: call.timeoutMs + 1000,
        bodyTimeout: call.timeoutMs + 1000,
      });
      if (res.statusCode < 200 || res.statusCode > 299) throw await this.#statusError(call, res);
      return await read(res);
    } catch (err) {
      if (res) discard(res.body);
      body?.stream.destroy();
      if (err instanceof UpstreamError) throw err;
      if (timedOut) throw new UpstreamError('timeout', `route ${id}: no answer within ${call.timeoutMs} ms`, true);
      if (call.signal.aborted) throw abortedError(id);
      throw networkError(id, err);
    } finally {
      // The upload, the upstream's work and its answer (read and parsed: small next to the wait).
      waitedOn(call.signal, performance.now() - sent);
      clearTimeout(timer);
      call.signal.removeEventListener('abort', onAbort);
    }
  }

  async #statusError(call: FileCall, res: Dispatcher.ResponseData): Promise<UpstreamError> {
    let text = '';
    try {
      text = await readText(res.body, this.#maxErrorBodyBytes, call.routeId, false);
    } catch {
      // The status alone classifies the failure.
    }
    // The storage URL's query is its signature: never let it reach a message.
    const secrets = [...(call.secrets ?? []), call.url.host, ...(call.url.search.length > 1 ? [call.url.search.slice(1)] : [])];
    const err = statusError(call.routeId, res.statusCode, text, secrets);
    if (err.upstreamMessage !== undefined || !call.explain) return err;
    const said = call.explain(text);
    return said === undefined ? err : new UpstreamError(err.kind, err.message, err.retryable, err.status, scrub(said, secrets));
  }
}

async function payloadBody(p: Payload): Promise<StreamedBody | null> {
  switch (p.type) {
    case 'multipart':
      return multipartBody(p.fields, p.file);
    case 'file':
      return fileBody(p.path, p.contentType, p.data);
    case 'json': {
      const bytes = Buffer.from(JSON.stringify(p.value));
      return { contentType: 'application/json', length: bytes.length, stream: Readable.from([bytes], { objectMode: false }) };
    }
    case 'none':
      return null;
  }
}

/** Reads a body up to `max` bytes: over it, `strict` fails; otherwise what fit is kept. */
async function readText(body: Readable, max: number, routeId: string, strict: boolean): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    if (size + chunk.length > max) {
      if (strict) throw protocolError(routeId, `the answer exceeds ${max} bytes`);
      parts.push(chunk.subarray(0, max - size));
      size = max;
      break;
    }
    parts.push(chunk);
    size += chunk.length;
  }
  return Buffer.concat(parts, size).toString('utf8');
}

/**
 * A URL a provider handed out for a file (Sarvam's storage upload and download URLs), checked
 * before the gateway sends audio to it or fetches from it: on the route's own origin (a
 * self-hosted or test upstream), or else https without credentials to a host that is not an
 * internal address written as an IP literal (loopback, private, link-local such as the cloud
 * metadata address…: src/shared/address.ts, the webhooks' classification too) nor a local name.
 * So an upstream cannot steer the audio or a GET at an internal service. Null when it fails the check.
 */
export function handedOutUrl(baseUrl: string, value: unknown): URL | null {
  if (typeof value !== 'string' || value.length > 8192) return null;
  let url: URL;
  let base: URL;
  try {
    url = new URL(value);
    base = new URL(baseUrl);
  } catch {
    return null;
  }
  if (url.username || url.password) return null;
  if (url.origin === base.origin) return url;
  if (url.protocol !== 'https:') return null;
  const range = addressRange(url.hostname);
  if (range !== null ? range !== 'unicast' : isLocalName(url.hostname)) return null;
  return url;
}
