// How a metered call no route served ends: the usage record's status it is released with, and the
// router's or upstream's failure as the error envelope the client receives. Shared by every
// metered endpoint (the text models' chat and embeddings, transcription, speech synthesis).
import { ApiError, ERRORS, type ErrorCode } from '../errors.ts';
import type { UsageFacts } from '../billing/types.ts';
import { RouterError } from '../providers/router-error.ts';
import type { CancelSignal } from '../providers/cancel.ts';

/**
 * The usage record's status of a call no route served: `client_closed` when the client left,
 * `rejected` when the request itself was refused (an upstream 400, or parameters no route can
 * honour: the client must change it), `upstream_failed` otherwise (unavailable or misconfigured).
 */
export function unservedStatus(err: unknown, signal: CancelSignal): UsageFacts['status'] {
  if (signal.aborted) return 'client_closed';
  return err instanceof RouterError && (err.code === 'invalid_request' || err.code === 'context_length_exceeded') ? 'rejected' : 'upstream_failed';
}

/** Router and upstream failures carry a code of our table; anything else passes through. */
export function toApiError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && code in ERRORS && code !== 'internal_error') {
    const param = (err as { param?: unknown }).param;
    return new ApiError(code as ErrorCode, (err as Error).message, typeof param === 'string' ? { param } : {});
  }
  return err;
}
