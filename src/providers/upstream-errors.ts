// How an upstream's failures become UpstreamErrors: the caller leaving, a network failure (by its
// code only: undici's and the OS's messages carry the address), a non-2xx status (with the
// upstream's own explanation, scrubbed of URLs, addresses and keys before it may reach a client).
// The HTTP clients (http.ts, upload.ts) and the router share them.
import { UpstreamError } from './types.ts';
import { isObject, parseJson } from './validate.ts';

export function abortedError(routeId: string): UpstreamError {
  return new UpstreamError('aborted', `route ${routeId}: the caller went away`, false);
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
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this replaces
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[url]')
    .replace(/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, '[address]')
    .replace(/\b(?:sk|key|api)[-_][A-Za-z0-9_-]{6,}/gi, '[redacted]')
    .trim();
  return out.length > MAX_EXPLANATION ? `${out.slice(0, MAX_EXPLANATION)}…` : out;
}
