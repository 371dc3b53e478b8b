// What every metered endpoint is built with (the text models' chat and embeddings, transcription,
// speech synthesis): the Meter, the failover router and the model's routes, and the client
// identifiers an upstream sees. Prices come from src/billing/pricing.ts; how a call no route served
// ends is outcomes.ts.
import { createHmac, hkdfSync } from 'node:crypto';
import type { Meter } from './meter.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { RoutedModel } from '../providers/routes.ts';

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
