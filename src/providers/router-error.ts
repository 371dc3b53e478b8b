// What the router answers when it cannot serve: a RouterError with one of the gateway's error codes
// and the attempts made. A request the upstream rejected goes back as `invalid_request` (or
// `context_length_exceeded`) with the upstream's own words, hidden of the route (hide.ts); a request
// no route served, as router.ts's failover policy says.
import { hideUpstream } from './hide.ts';
import type { Refusal, ResolvedRoute, UpstreamError } from './types.ts';

export type RouterErrorCode = 'model_unavailable' | 'model_misconfigured' | 'invalid_request' | 'context_length_exceeded';

/** What happened on one route during one request, for logs and tests. */
export interface Attempt {
  route: string;
  outcome: UpstreamError['kind'] | 'queue_timeout' | 'unsupported';
  status?: number;
}

/** The router could not serve. `code` is one of the gateway's error codes; the message names route ids at most. */
export class RouterError extends Error {
  override name = 'RouterError';
  constructor(
    readonly code: RouterErrorCode,
    message: string,
    readonly attempts: Attempt[],
    /** The request field at fault, when one is (a parameter no route could honour). */
    readonly param?: string,
  ) {
    super(message);
  }
}

const CONTEXT_LENGTH = /context (length|window)|maximum context|too many (input )?tokens|prompt is too long|input is too long/i;

/** The upstream's own words reach the client without the names that would give the route away. */
export function rejected(failure: UpstreamError, route: ResolvedRoute, attempts: Attempt[]): RouterError {
  const said = failure.upstreamMessage === undefined ? undefined : hideUpstream(failure.upstreamMessage, route);
  if (said && CONTEXT_LENGTH.test(said)) {
    return new RouterError('context_length_exceeded', `the request exceeds the model's context window: ${said}`, attempts);
  }
  return new RouterError('invalid_request', said ? `the upstream rejected the request: ${said}` : 'the upstream rejected the request', attempts);
}

/**
 * No route served: `invalid_request` naming the parameter when every route refused the request or
 * cannot work at all, `model_misconfigured` when every route tried failed as misconfigured (or the
 * model has no route), otherwise `model_unavailable`.
 */
export function exhausted(attempts: Attempt[], refusal: Refusal | undefined): RouterError {
  const ids = [...new Set(attempts.map((a) => a.route))].join(', ');
  if (attempts.length === 0) return new RouterError('model_misconfigured', 'the model has no upstream route', attempts);
  // Every route either cannot honour the request or cannot work at all: a retry would not help,
  // a different request would.
  if (refusal && attempts.every((a) => a.outcome === 'unsupported' || a.outcome === 'config')) {
    return new RouterError('invalid_request', refusal.message, attempts, refusal.param);
  }
  if (attempts.every((a) => a.outcome === 'config')) {
    return new RouterError('model_misconfigured', `the model's upstream routes are misconfigured (${ids})`, attempts);
  }
  return new RouterError('model_unavailable', `no upstream route could serve the request (tried ${ids})`, attempts);
}
