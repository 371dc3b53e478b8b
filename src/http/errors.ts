// The HTTP edge of the error table (src/errors.ts): every error leaves the process through
// toEnvelope(), in the spec's envelope, with the request id.
import type { ApiError, ErrorCode } from '../errors.ts';

export { ApiError, ERRORS, type ErrorCode } from '../errors.ts';

export interface ErrorEnvelope {
  error: { message: string; type: string; code: ErrorCode; param?: string; request_id?: string };
}

export function toEnvelope(err: ApiError, requestId: string): ErrorEnvelope | { detail: string } {
  if (err.options.bare) return { detail: err.message };
  return {
    error: {
      message: err.message,
      type: err.type,
      code: err.code,
      ...(err.options.param !== undefined ? { param: err.options.param } : {}),
      request_id: requestId,
    },
  };
}
