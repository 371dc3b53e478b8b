// What every upstream call shares, whatever its capability: the route as an administrator
// configures it on a model (RouteConfig) and as the router calls it (ResolvedRoute), the refusal
// that passes a route over before any call, and the UpstreamError a call fails with.

/** A model's route as configured (PUT /admin/models); routes.ts resolves it into a ResolvedRoute. */
export interface RouteConfig {
  /** Provider folder name under src/providers/ (PROVIDER_NAMES): 'openai' (any OpenAI-compatible server), 'anthropic', 'sarvam', 'deepgram', 'elevenlabs', 'local'. */
  provider: string;
  /** Required, except for in-process providers (`local`). */
  base_url?: string;
  /** The upstream key, inline (stored; never returned to clients) or by environment variable name. */
  api_key?: string;
  api_key_env?: string;
  /** Every route but a carrier's (a voice model's) names the upstream's model. */
  upstream_model?: string;
  timeout_ms?: number;
  max_concurrent?: number;
  rpm?: number;
  /** stt: serve realtime sockets over the provider's streaming protocol (openai, sarvam, deepgram); tts on sarvam: speak over its HTTP stream. */
  realtime?: boolean;
  /** Carriers: Twilio's account SID (`api_key` is its auth token), Exotel's account SID and API token (`api_key` its API key). */
  account_sid?: string;
  api_token?: string;
  /** Carriers: the caller id calls are placed from (E.164; an ExoPhone also 0XXXXXXXXXX), unless a call names another the route owns. */
  from?: string;
  /** Exotel: the flow (app id) its calls go through, on Exotel's v1 `Calls/connect` (src/providers/exotel/classic.ts). */
  app_id?: string;
}

export interface ResolvedRoute {
  /** Stable id for health tracking and limits: `${modelId}#${index}`. */
  id: string;
  provider: string;
  baseUrl: string;
  /** Resolved key (inline or from the environment); empty when the route has none. */
  apiKey: string;
  upstreamModel: string;
  timeoutMs: number;
  maxConcurrent?: number;
  rpm?: number;
  /** Serves realtime sockets over the provider's own streaming protocol (`realtime` capability); a Sarvam speech route speaks over its HTTP stream. */
  realtime?: boolean;
  /**
   * Set by resolveRoutes when the route cannot work as configured (key variable unset, unparsable
   * base_url, unknown provider): the router counts it as misconfigured without calling it. For
   * logs only; it may name an environment variable, never a key.
   */
  problem?: string;
  /**
   * The URLs of this route's calls by path ('' for base_url itself), parsed on first use by
   * routeUrl and kept on the route, which RouteResolver reuses for every call of a model version.
   */
  urls?: Map<string, URL | null>;
}

/**
 * A request a provider cannot honour as asked (a parameter it has no equivalent for): `param` names
 * the request field, `message` says why, in words fit for the client.
 */
export interface Refusal {
  param: string;
  message: string;
}

/**
 * Why an upstream call failed. `retryable` failures (connect error, timeout, 5xx, 429, a malformed
 * answer) may succeed on another try; `config` failures (no key, bad URL, 401/403/404 from the
 * upstream) mean the route cannot work as configured. The router fails over to the next route on
 * both. `client` failures (400/413/422 from the upstream for the request itself) go back to the
 * caller; `protocol` is a malformed upstream answer; `aborted` means the caller's signal fired.
 * The message names the route id at most, never the upstream URL or key.
 */
export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly kind: 'connect' | 'timeout' | 'http' | 'protocol' | 'config' | 'client' | 'aborted',
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    /**
     * The upstream's own explanation of a rejected request, scrubbed of URLs and the route's key
     * and cut short, so it can be shown to the client (set on `client` failures).
     */
    readonly upstreamMessage?: string,
  ) {
    super(message);
  }
}
