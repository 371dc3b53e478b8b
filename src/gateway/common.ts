// What the metered endpoints share: their dependencies, cost arithmetic in integer micro-cents, the
// sanity check on upstream usage, and the translation of router failures into the error envelope
// and a usage record's status.
import { ApiError, ERRORS, type ErrorCode } from '../http/errors.ts';
import type { Billing, Payer, UsageFacts } from '../billing/types.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { Pricing, RouteConfig } from '../models/types.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import { RouterError, type UpstreamRouter } from '../providers/router.ts';
import type { CancelSignal } from '../providers/cancel.ts';

export interface GatewayDeps {
  models: ModelCatalog;
  billing: Billing;
  router: UpstreamRouter;
  assertKyc(payer: Payer, requiresKyc: boolean): void;
  resolveRoutes(modelId: string, routes: RouteConfig[]): ResolvedRoute[];
  now(): number;
}

/**
 * Cost in micro-cents: a price in cents per million tokens is exactly micro-cents per token.
 * Estimates round up (a hold must cover the call); settled costs stay exact (fractional): billing
 * charges whole µ¢ and carries the fraction, so no rounding error accumulates over calls.
 */
export function costMicrocents(pricing: Pricing, promptTokens: number, completionTokens: number, rounding: 'ceil' | 'exact'): number {
  const exact = promptTokens * (pricing.input_cents_per_mtok ?? 0) + completionTokens * (pricing.output_cents_per_mtok ?? 0);
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
