// Virtual models and their upstream routes, as an administrator configures them (PUT /admin/models).
// Stored in the `models` collection, _id = the virtual model id clients send. The closed lists
// (model types, STT modes...) and the JSON schema are in src/shared/model-schema.ts; a route's
// settings (RouteConfig) are the providers' to read: src/providers/upstream.ts.
import type { MODEL_TYPES, STT_MODES, STT_TIMESTAMPS, VOICE_FEATURES } from '../shared/model-schema.ts';
import type { RouteConfig } from '../providers/upstream.ts';
import type { Voicemail } from '../shared/voicemail-schema.ts';
import type { AgentTools } from '../shared/tool-schema.ts';
import type { AnalysisRequest } from '../shared/analysis-schema.ts';

export type { RouteConfig };

export type ModelType = (typeof MODEL_TYPES)[number];
export type SttMode = (typeof STT_MODES)[number];
export type SttTimestamps = (typeof STT_TIMESTAMPS)[number];
export type VoiceFeature = (typeof VOICE_FEATURES)[number];

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
  /** voice only: the stt and tts models its calls listen and speak with, and the intent model of its default agent. */
  stt_model?: string;
  tts_model?: string;
  intent_model?: string;
  /** voice only: the one price of a call, per minute of answered time, billed by the second (its STT, TTS and intent are not billed again). */
  price_per_minute_cents?: number;
  /** voice only: what its calls do when an answering machine answers, unless a call says (its `voicemail`). */
  voicemail?: Voicemail;
  /** voice only: what its calls' analysis asks after they end, unless a call gives its own `analysis` (src/voice/analysis.ts). */
  analysis?: AnalysisRequest;
  /** voice only: ISO 3166 alpha-2 countries its calls may dial. */
  countries?: string[];
  /** voice only: the longest call (and the default of a call's max_duration_seconds: the smaller of this and 600). */
  max_duration_seconds?: number;
  features?: VoiceFeature[];
  /** voice only: whether its calls are recorded when the call does not say (`record`), and how long recordings are kept. */
  record?: boolean;
  recording_retention_days?: number;
  /** voice only: the tools its calls' agents have (issue 41 §5), sent to the operator's endpoint signed with the secret its env var holds. */
  agent_tools?: AgentTools;
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
