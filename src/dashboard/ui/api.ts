// The one way the dashboard talks to the gateway: same-origin JSON with the X-Gateway-Client header
// (the server refuses a cookie-authenticated state change without it). Failures arrive as ApiFailure
// carrying the error envelope's message, code and request id, which the pages show as they are.
export interface ErrorEnvelope {
  error: { message: string; type?: string; code: string; param?: string; request_id?: string };
}

export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly requestId: string | null,
  ) {
    super(message);
  }
}

export type Query = Record<string, string | number | undefined | null>;

export interface Api {
  get<T>(path: string, query?: Query): Promise<T>;
  /** `body` is JSON, or a FormData sent as multipart (an upload). */
  send<T>(method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown, headers?: Record<string, string>): Promise<T>;
  /** The answer itself (streamed audio), once ok; a refusal is thrown as the others' are. */
  raw(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Response>;
}

export function withQuery(path: string, query: Query = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** `onSignedOut` runs when the gateway answers 401 to a session call (expired or signed out elsewhere). */
export function createApi(onSignedOut: () => void): Api {
  /** The answer, once ok; a refusal (the envelope's message, code and request id) or no answer as ApiFailure. */
  const answer = async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<Response> => {
    const headers: Record<string, string> = { 'x-gateway-client': 'dashboard', accept: 'application/json', ...extra };
    // A form (an upload) goes as multipart with the boundary the browser writes; anything else as JSON.
    const form = body instanceof FormData;
    if (body !== undefined && !form) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : form ? body : JSON.stringify(body) });
    } catch {
      throw new ApiFailure(0, 'network_error', 'The gateway could not be reached; check the connection and retry.', null);
    }
    if (res.ok) return res;
    let e: ErrorEnvelope['error'] | undefined;
    try {
      e = (JSON.parse(await res.text()) as ErrorEnvelope | null)?.error;
    } catch {
      /* not JSON (a 413 page) */
    }
    if (res.status === 401 && e?.code === 'invalid_session' && path.startsWith('/portal/') && !path.startsWith('/portal/auth/')) onSignedOut();
    throw new ApiFailure(
      res.status,
      e?.code ?? 'http_error',
      e?.message ?? `The gateway answered ${res.status}.`,
      e?.request_id ?? res.headers.get('x-request-id'),
    );
  };
  const request = async <T>(method: string, path: string, body?: unknown, extra?: Record<string, string>): Promise<T> => {
    const text = await (await answer(method, path, body, extra)).text();
    try {
      return (text ? JSON.parse(text) : null) as T;
    } catch {
      return null as T;
    }
  };
  return {
    get: (path, query) => request('GET', withQuery(path, query)),
    send: (method, path, body, headers) => request(method, path, body, headers),
    raw: (method, path, body) => answer(method, path, body),
  };
}

/** A list page as the gateway answers it: `{data, has_more, next_after}` (older lists: `{data}`; /v1's: `last_id` for the cursor). */
export interface Page<T> {
  data: T[];
  has_more?: boolean;
  next_after?: string | number | null;
  last_id?: string | null;
}
