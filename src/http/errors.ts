// The HTTP edge of the error table (src/errors.ts): every error leaves the process through
// toEnvelope(), in the spec's envelope, with the request id.
import type { ApiError, ErrorCode } from '../errors.ts';

export { ApiError, echo, ERRORS, REFUSALS, type ErrorCode } from '../errors.ts';

export interface ErrorEnvelope {
  /** `param` is always there, null when no field is at fault (OpenAI's Error requires it). */
  error: { message: string; type: string; code: ErrorCode; param: string | null; request_id?: string };
}

/**
 * The error's body. The spec's per-key limits answer a bare `{detail}`; `sdk` (a request from a
 * client that reads only `error.message`: readsOnlyOpenAIErrors) adds the envelope beside `detail`, so the
 * client shows the reason instead of "429 status code (no body)" or "Too Many Requests". See README "Errors".
 */
export function toEnvelope(err: ApiError, requestId: string, opts: { sdk?: boolean } = {}): ErrorEnvelope | { detail: string } {
  if (err.options.bare && !opts.sdk) return { detail: err.message };
  if (err.options.bare) return { detail: err.message, ...envelope(err, requestId) };
  return envelope(err, requestId);
}

function envelope(err: ApiError, requestId: string): ErrorEnvelope {
  return {
    error: {
      message: err.message,
      type: err.type,
      code: err.code,
      param: err.options.param ?? null,
      request_id: requestId,
    },
  };
}

/**
 * Whether a request comes from a client that reads only OpenAI's `error` envelope: OpenAI's official
 * SDKs (openai-node and openai-python send `X-Stainless-Lang`) and the Vercel AI SDK (its user
 * agent names `ai-sdk/provider-utils/<v>`, and `ai-sdk/<provider>/<v>` outside generateText).
 */
export function readsOnlyOpenAIErrors(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  if (headers['x-stainless-lang'] !== undefined) return true;
  const ua = headers['user-agent'];
  return typeof ua === 'string' && ua.includes('ai-sdk/');
}
