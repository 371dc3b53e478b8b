// What the metered endpoints share: their dependencies, the client identifiers an upstream sees, and
// the translation of router failures into the error envelope and a usage record's status. Prices
// come from src/billing/pricing.ts.
import { createHmac, hkdfSync } from 'node:crypto';
import { ApiError, ERRORS, type ErrorCode } from '../errors.ts';
import type { UsageFacts } from '../billing/types.ts';
import type { Meter } from '../metering/meter.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import { RouterError } from '../providers/router-error.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { CancelSignal } from '../providers/cancel.ts';

export interface GatewayDeps {
  meter: Meter;
  router: UpstreamRouter;
  /** The model's routes as the router calls them (resolved once per model version: RouteResolver). */
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  /** What an upstream sees of a client's end-user id or cache key: see `opaqueIds`. */
  opaqueId(walletId: string, value: string): string;
  now(): number;
}

/**
 * Client-chosen identifiers (OpenAI's `safety_identifier`, `user`, `prompt_cache_key`) as an
 * upstream receives them: an HMAC of the paying account's wallet id and the value, keyed from the
 * gateway's secret (43 characters, base64url). Stable, so the upstream's abuse tracking and cache
 * routing work per end user and per key; scoped to the account, so two accounts' "user-1" (or cache
 * key "default") never merge on our shared upstream account; and opaque, so an e-mail address a
 * client sends does not reach the provider.
 */
export function opaqueIds(secret: string): (walletId: string, value: string) => string {
  const key = Buffer.from(hkdfSync('sha256', secret, '', 'upstream end-user identifiers', 32));
  return (walletId, value) => createHmac('sha256', key).update(walletId).update('\0').update(value).digest('base64url');
}

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
