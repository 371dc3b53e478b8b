// What the metered endpoints share: their dependencies, cost arithmetic in integer micro-cents, the
// sanity check on upstream usage, and the translation of router failures into the error envelope
// and a usage record's status.
import { createHmac, hkdfSync } from 'node:crypto';
import { ApiError, ERRORS, type ErrorCode } from '../errors.ts';
import type { UsageFacts } from '../billing/types.ts';
import type { Meter } from '../metering/meter.ts';
import type { Pricing } from '../models/types.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import { RouterError, type RoutedModel, type UpstreamRouter } from '../providers/router.ts';
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
 * Cost in micro-cents: a price in cents per million tokens is exactly micro-cents per token.
 * Estimates round up (a hold must cover the call); settled costs stay exact (fractional): billing
 * charges whole µ¢ and carries the fraction, so no rounding error accumulates over calls.
 * `cachedTokens` (of the prompt, read from the upstream's cache) cost the cached-input price where
 * the model has one; an estimate counts none, so it is the upper bound (the catalog keeps the
 * cached price at most the input price).
 */
export function costMicrocents(pricing: Pricing, promptTokens: number, completionTokens: number, rounding: 'ceil' | 'exact', cachedTokens = 0): number {
  const input = pricing.input_cents_per_mtok ?? 0;
  const exact =
    (promptTokens - cachedTokens) * input + cachedTokens * (pricing.cached_input_cents_per_mtok ?? input) + completionTokens * (pricing.output_cents_per_mtok ?? 0);
  return rounding === 'ceil' ? Math.ceil(exact) : exact;
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
