// The JSON schema of a virtual model (PUT /admin/models/{id} and config seeds): typebox, closed,
// with the closed lists its fields take (the model types, STT modes and timestamps, voice features).
// Here on the foundation floor, not in src/models/, because the config schema (src/config.ts) seeds
// models in this shape; src/models/types.ts derives its types from these lists.
import { Type, type TSchema } from 'typebox';
import { KeyString } from './strings.ts';
import { CALLER_ID_PATTERN } from './phones.ts';
import { VoicemailSchema } from './voicemail-schema.ts';
import { AgentToolsSchema } from './tool-schema.ts';
import { AnalysisSchema } from './analysis-schema.ts';

export const MODEL_TYPES = ['llm', 'stt', 'tts', 'embedding', 'voice', 'intent'] as const;
export const STT_MODES = ['transcribe', 'translate', 'verbatim', 'translit', 'codemix'] as const;
export const STT_TIMESTAMPS = ['segment', 'word', 'none'] as const;
/** What a voice model's calls can do (shown in /v1/models). */
export const VOICE_FEATURES = ['intent_agent', 'llm_agent', 'barge_in', 'dtmf', 'transcript'] as const;

const Closed = <T extends Record<string, TSchema>>(props: T) => Type.Object(props, { additionalProperties: false });

const Cents = Type.Number({ minimum: 0, maximum: 1e9 });
const Lang = Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35 });

export const RouteSchema = Closed({
  provider: KeyString(64, { minLength: 1 }),
  base_url: Type.Optional(KeyString(2048, { minLength: 1 })),
  api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  api_key_env: Type.Optional(Type.String({ pattern: '^[A-Z_][A-Z0-9_]{0,127}$' })),
  /** Required on every route but a carrier's (voice models' routes: simulator, twilio, exotel). */
  upstream_model: Type.Optional(KeyString(256, { minLength: 1 })),
  timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: 600_000 })),
  max_concurrent: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
  rpm: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  realtime: Type.Optional(Type.Boolean()),
  /** Carriers (twilio, exotel): the account, Exotel's second credential, and the caller id calls come from. */
  account_sid: Type.Optional(KeyString(128, { minLength: 1 })),
  api_token: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  /** E.164, or (an exotel route's ExoPhone) Exotel's national form `0XXXXXXXXXX`; src/models/catalog.ts checks it is a real number. */
  from: Type.Optional(Type.String({ pattern: CALLER_ID_PATTERN })),
  /**
   * An exotel route that places its calls through Exotel's long-standing v1 API (`Calls/connect`
   * with a flow): the flow's app id, whose Voicebot applet streams to the gateway (docs/api/voice.md).
   */
  app_id: Type.Optional(Type.String({ pattern: '^[0-9]{1,12}$' })),
});

export const ModelSchema = Closed({
  type: Type.Union(MODEL_TYPES.map((t) => Type.Literal(t))),
  owned_by: KeyString(128, { minLength: 1 }),
  reasoning: Type.Optional(Type.Boolean()),
  tools: Type.Optional(Type.Boolean()),
  languages: Type.Optional(Type.Array(Lang, { maxItems: 200 })),
  streaming: Type.Optional(Type.Boolean()),
  voices: Type.Optional(Type.Array(KeyString(128, { minLength: 1 }), { maxItems: 1000 })),
  max_input_chars: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
  modes: Type.Optional(Type.Array(Type.Union(STT_MODES.map((m) => Type.Literal(m))), { minItems: 1, maxItems: STT_MODES.length, uniqueItems: true })),
  timestamps: Type.Optional(Type.Union(STT_TIMESTAMPS.map((t) => Type.Literal(t)))),
  jobs: Type.Optional(Type.Boolean()),
  diarization: Type.Optional(Type.Boolean()),
  context_window: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
  max_output_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
  // Optional for a voice model only, whose price is price_per_minute_cents (src/models/catalog.ts).
  pricing: Type.Optional(
    Closed({
      input_cents_per_mtok: Type.Optional(Cents),
      cached_input_cents_per_mtok: Type.Optional(Cents),
      output_cents_per_mtok: Type.Optional(Cents),
      cents_per_minute: Type.Optional(Cents),
      cents_per_1k_chars: Type.Optional(Cents),
      cents_per_call: Type.Optional(Cents),
    }),
  ),
  routes: Type.Array(RouteSchema, { maxItems: 16 }),
  requires_kyc: Type.Optional(Type.Boolean()),
  pack: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' })),
  // voice only: what its calls run on and cost.
  stt_model: Type.Optional(KeyString(128, { minLength: 1 })),
  tts_model: Type.Optional(KeyString(128, { minLength: 1 })),
  intent_model: Type.Optional(KeyString(128, { minLength: 1 })),
  price_per_minute_cents: Type.Optional(Cents),
  /** voice only: what its calls do when a machine answers, unless a call says (src/shared/voicemail-schema.ts). */
  voicemail: Type.Optional(VoicemailSchema),
  /** voice only: its calls' analysis when a call gives none (src/shared/analysis-schema.ts). */
  analysis: Type.Optional(AnalysisSchema),
  countries: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z]{2}$' }), { minItems: 1, maxItems: 250, uniqueItems: true })),
  max_duration_seconds: Type.Optional(Type.Integer({ minimum: 30, maximum: 3600 })),
  features: Type.Optional(Type.Array(Type.Union(VOICE_FEATURES.map((f) => Type.Literal(f))), { maxItems: VOICE_FEATURES.length, uniqueItems: true })),
  record: Type.Optional(Type.Boolean()),
  recording_retention_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 3650 })),
  /** voice only: the tools its calls' agents have, the operator's endpoint and its signing secret's env var (src/shared/tool-schema.ts). */
  agent_tools: Type.Optional(AgentToolsSchema),
});

/** A seeded model in config: the same fields plus its id. */
export const SeedModelSchema = Type.Object({ id: KeyString(128, { minLength: 1 }), ...ModelSchema.properties }, { additionalProperties: false });
