// The closed set of error codes the gateway answers with, each with its HTTP status and OpenAI-style
// `type` (the spec's codes first, ours after), and ApiError, which domain code, actors and sockets
// throw with one of them. Nothing here knows HTTP or WebSocket framing: the HTTP edge
// (src/http/errors.ts) turns an ApiError into the spec's envelope and status, the WebSocket edge into
// an `error` frame.
//
// What a message quotes of a client's value is cut short (`echo`): a 1 MB model name is not sent back
// whole. The constructor caps every message (and `param`) as a backstop for a quote without it.

export const ERRORS = {
  // The spec's table.
  missing_input: { status: 400, type: 'invalid_request_error' },
  invalid_message_role: { status: 400, type: 'invalid_request_error' },
  context_length_exceeded: { status: 400, type: 'invalid_request_error' },
  voice_not_supported: { status: 400, type: 'invalid_request_error' },
  language_not_supported: { status: 400, type: 'invalid_request_error' },
  invalid_api_key: { status: 401, type: 'invalid_request_error' },
  insufficient_credit: { status: 402, type: 'insufficient_quota' },
  kyc_required: { status: 403, type: 'permission_error' },
  permission_denied: { status: 403, type: 'permission_error' },
  insufficient_scope: { status: 403, type: 'permission_error' },
  model_not_found: { status: 404, type: 'invalid_request_error' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  model_unavailable: { status: 503, type: 'server_error' },
  model_misconfigured: { status: 503, type: 'server_error' },
  // Ours: the store refuses writes (a full disk): metered calls are refused, not served unrecorded.
  store_unavailable: { status: 503, type: 'server_error' },
  // Ours: audio.
  invalid_audio: { status: 400, type: 'invalid_request_error' },
  audio_too_long: { status: 400, type: 'invalid_request_error' },
  mode_not_supported: { status: 400, type: 'invalid_request_error' },
  input_too_long: { status: 400, type: 'invalid_request_error' },
  job_not_completed: { status: 409, type: 'conflict_error' },
  range_not_satisfiable: { status: 416, type: 'invalid_request_error' },
  // Ours: voice calls.
  destination_not_allowed: { status: 400, type: 'invalid_request_error' },
  idempotency_key_reused: { status: 409, type: 'conflict_error' },
  call_not_active: { status: 409, type: 'conflict_error' },
  concurrency_limit_exceeded: { status: 429, type: 'rate_limit_error' },
  // Ours: voice batches (a control its status does not allow).
  batch_not_active: { status: 409, type: 'conflict_error' },
  // Ours: request shape.
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_json: { status: 400, type: 'invalid_request_error' },
  unsupported_media_type: { status: 415, type: 'invalid_request_error' },
  body_too_large: { status: 413, type: 'invalid_request_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  not_found: { status: 404, type: 'invalid_request_error' },
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  // Ours: portal and admin.
  invalid_session: { status: 401, type: 'authentication_error' },
  invalid_credentials: { status: 401, type: 'authentication_error' },
  invalid_admin_token: { status: 401, type: 'authentication_error' },
  invalid_metrics_token: { status: 401, type: 'authentication_error' },
  admin_disabled: { status: 403, type: 'permission_error' },
  role_forbidden: { status: 403, type: 'permission_error' },
  cross_site_request: { status: 403, type: 'permission_error' },
  email_taken: { status: 409, type: 'conflict_error' },
  already_in_org: { status: 409, type: 'conflict_error' },
  not_in_org: { status: 409, type: 'conflict_error' },
  owner_cannot_leave: { status: 409, type: 'conflict_error' },
  org_wallet_not_empty: { status: 409, type: 'conflict_error' },
  key_limit_reached: { status: 409, type: 'conflict_error' },
  conflict: { status: 409, type: 'conflict_error' },
  revision_conflict: { status: 409, type: 'conflict_error' },
  wallet_limit_exceeded: { status: 409, type: 'conflict_error' },
  invitation_expired: { status: 410, type: 'invalid_request_error' },
  actor_state_too_large: { status: 413, type: 'invalid_request_error' },
  // Ours: server side.
  actor_busy: { status: 503, type: 'server_error' },
  too_many_connections: { status: 503, type: 'server_error' },
  not_ready: { status: 503, type: 'server_error' },
  shutting_down: { status: 503, type: 'server_error' },
  internal_error: { status: 500, type: 'server_error' },
} as const satisfies Record<string, { status: number; type: string }>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * The 5xx that are operating conditions, not faults: no upstream could serve (down, or its slots
 * held by other requests past the queue wait), an actor held by another instance, the connection
 * cap, not ready yet, shutting down. The edges log them at warn with their code and message, no
 * stack (it would only show where the refusal was raised); the other 5xx (`internal_error`, and
 * `model_misconfigured`, which an operator must fix) at error.
 */
export const REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>(['model_unavailable', 'actor_busy', 'too_many_connections', 'not_ready', 'shutting_down']);

/** The most of a client's value an error message quotes; a longer one is cut, with an ellipsis. */
export const ECHO_MAX_CHARS = 100;
/** The most a message (or a `param`) holds in all. */
const MESSAGE_MAX_CHARS = 1000;

/** A client's value as an error message quotes it: at most `max` characters, "…" where it was cut. */
export function echo(value: unknown, max = ECHO_MAX_CHARS): string {
  const s = String(value);
  if (s.length <= max) return s;
  const high = s.charCodeAt(max - 1);
  return `${s.slice(0, high >= 0xd800 && high <= 0xdbff ? max - 1 : max)}…`; // not between a surrogate pair's halves
}

export class ApiError extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly type: string;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly options: {
      param?: string;
      type?: string;
      headers?: Record<string, string>;
      /** Answer with the bare body `{detail: message}` (the spec's per-key RPM/TPD 429s). */
      bare?: boolean;
    } = {},
  ) {
    super(echo(message, MESSAGE_MAX_CHARS));
    if (options.param !== undefined && options.param.length > MESSAGE_MAX_CHARS) this.options = { ...options, param: echo(options.param, MESSAGE_MAX_CHARS) };
    this.status = ERRORS[code].status;
    this.type = options.type ?? ERRORS[code].type;
  }
}
