// Virtual models and their upstream routes, as an administrator configures them (PUT /admin/models).
// Stored in the `models` collection, _id = the virtual model id clients send.

export const MODEL_TYPES = ['llm', 'stt', 'tts', 'embedding', 'voice', 'intent'] as const;
export type ModelType = (typeof MODEL_TYPES)[number];

export const STT_MODES = ['transcribe', 'translate', 'verbatim', 'translit', 'codemix'] as const;
export type SttMode = (typeof STT_MODES)[number];
export const STT_TIMESTAMPS = ['segment', 'word', 'none'] as const;
export type SttTimestamps = (typeof STT_TIMESTAMPS)[number];

export interface RouteConfig {
  /** Provider folder name under src/providers/ (PROVIDER_NAMES): 'openai' (any OpenAI-compatible server), 'anthropic', 'sarvam', 'deepgram', 'elevenlabs', 'local'. */
  provider: string;
  /** Required, except for in-process providers (`local`). */
  base_url?: string;
  /** The upstream key, inline (stored; never returned to clients) or by environment variable name. */
  api_key?: string;
  api_key_env?: string;
  upstream_model: string;
  timeout_ms?: number;
  max_concurrent?: number;
  rpm?: number;
  /** stt: serve realtime sockets over the provider's streaming protocol (openai, sarvam, deepgram); tts on sarvam: speak over its HTTP stream. */
  realtime?: boolean;
}

/** Fractions of a cent are allowed everywhere. */
export interface Pricing {
  input_cents_per_mtok?: number;
  /**
   * Prompt tokens the upstream read from its prompt cache (OpenAI's cached_tokens, Anthropic's
   * cache reads), when it says how many: at most input_cents_per_mtok; absent, they cost as input.
   */
  cached_input_cents_per_mtok?: number;
  output_cents_per_mtok?: number;
  cents_per_minute?: number;
  cents_per_1k_chars?: number;
  cents_per_call?: number;
}

/** What an administrator sets on a model (PUT /admin/models/{id}). */
export interface ModelFields {
  type: ModelType;
  owned_by: string;
  reasoning?: boolean;
  /** llm: the model takes OpenAI's tool calling (tools, tool_choice, tool messages). */
  tools?: boolean;
  languages?: string[];
  streaming?: boolean;
  voices?: string[];
  /** tts: the longest `input` a request may carry, in characters (Unicode code points); default 4096. */
  max_input_chars?: number;
  /** stt: the output modes offered (default `['transcribe']`), the finest timestamps it gives
   * (`segment`, `word` or `none`; default `segment`), whether it runs async jobs and labels speakers. */
  modes?: SttMode[];
  timestamps?: SttTimestamps;
  jobs?: boolean;
  diarization?: boolean;
  context_window?: number;
  max_output_tokens?: number;
  pricing: Pricing;
  routes: RouteConfig[];
  /** Calls need a KYC-verified account (403 kyc_required otherwise). */
  requires_kyc?: boolean;
  /** intent only: the intent pack the model serves (default: the pack with the model's id). */
  pack?: string;
}

export interface ModelDoc extends ModelFields {
  _id: string;
  created_at: Date;
  updated_at: Date;
  /**
   * A new random value on every write of the model: what is derived from it (its resolved routes)
   * is kept per revision. Absent on models written before it existed.
   */
  revision?: string;
  [k: string]: unknown;
}
