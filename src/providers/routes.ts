// Route resolution: a model's configured routes (RouteConfig, as an administrator writes them on
// the model) turned into the routes the router calls (ResolvedRoute), keys read from the inline
// api_key or from the environment object the composition root passes. Resolved once per model
// version (RouteResolver), so the hot path reuses them.
import { LRUCache } from 'lru-cache';
import { usableBaseUrl } from './http.ts';
import { DEFAULT_BASE_URLS, IN_PROCESS_PROVIDERS, isProviderName } from './index.ts';
import type { ResolvedRoute, RouteConfig } from './types.ts';

export const DEFAULT_TIMEOUT_MS = 60_000;
const MAX_TIMEOUT_MS = 600_000;

/**
 * What route resolution reads of a model (a ModelDoc, src/models/types.ts): its id, routes, and
 * what tells one version from the next.
 */
export interface RoutedModel {
  _id: string;
  routes: RouteConfig[];
  updated_at: Date;
  /** A new random value on every write of the model; absent on models written before it existed. */
  revision?: string;
}

/**
 * resolveRoutes once per model version, not on every call: the resolved routes (and the URLs their
 * calls memoize on them) are reused until an administrator changes the model. Keyed by the model's
 * revision (the catalog gives one to models stored before revisions existed, at start); a model an
 * older instance writes during a rolling upgrade has none and is keyed by its update time and routes. At
 * most `max` versions are kept, the least recently used dropped first.
 */
export class RouteResolver {
  readonly #resolved: LRUCache<string, ResolvedRoute[]>;

  constructor(
    private readonly env: Readonly<Record<string, string | undefined>>,
    max = 1000,
  ) {
    this.#resolved = new LRUCache({ max });
  }

  routes(model: RoutedModel): ResolvedRoute[] {
    const version = model.revision ?? `${model.updated_at.getTime()}:${JSON.stringify(model.routes)}`;
    const key = `${model._id}\n${version}`;
    let routes = this.#resolved.get(key);
    if (routes === undefined) {
      routes = resolveRoutes(model._id, model.routes, this.env);
      this.#resolved.set(key, routes);
    }
    return routes;
  }
}

/**
 * Turns a model's configured routes into what the router calls. Keys come from the inline api_key
 * or from `env[api_key_env]` (an object the composition root passes; never process.env here). A
 * route that cannot work (its key variable unset or empty, a base_url that is not an http(s) URL
 * without credentials, an unknown provider) is returned with `problem` set and fails as
 * misconfigured when called, so one bad route neither stops the model loading nor the others.
 */
export function resolveRoutes(
  modelId: string,
  routes: RouteConfig[],
  env: Readonly<Record<string, string | undefined>>,
  defaultTimeoutMs = DEFAULT_TIMEOUT_MS,
): ResolvedRoute[] {
  return routes.map((r, i) => {
    const problems: string[] = [];
    let apiKey = r.api_key ?? '';
    if (!apiKey && r.api_key_env) {
      apiKey = Object.hasOwn(env, r.api_key_env) ? (env[r.api_key_env] ?? '') : '';
      if (!apiKey) problems.push(`environment variable ${r.api_key_env} is not set`);
    }
    if (!isProviderName(r.provider)) problems.push(`unknown provider "${r.provider}"`);
    const inProcess = IN_PROCESS_PROVIDERS.includes(r.provider);
    const baseUrl = r.base_url ?? DEFAULT_BASE_URLS[r.provider] ?? '';
    if (!inProcess && !usableBaseUrl(baseUrl)) problems.push('base_url is not an http(s) URL without credentials');
    const timeout = positive(r.timeout_ms);
    const route: ResolvedRoute = {
      id: `${modelId}#${i}`,
      provider: r.provider,
      baseUrl,
      apiKey,
      upstreamModel: r.upstream_model ?? '',
      timeoutMs: timeout === null ? defaultTimeoutMs : Math.min(timeout, MAX_TIMEOUT_MS),
    };
    const maxConcurrent = positive(r.max_concurrent);
    const rpm = positive(r.rpm);
    if (maxConcurrent !== null) route.maxConcurrent = maxConcurrent;
    if (rpm !== null) route.rpm = rpm;
    if (r.realtime === true) route.realtime = true;
    if (problems.length > 0) route.problem = problems.join('; ');
    return route;
  });
}

/** A positive safe integer, or null (a route's timeout_ms, max_concurrent and rpm when unset or unusable). */
export function positive(n: number | undefined): number | null {
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : null;
}
