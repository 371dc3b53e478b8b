// The model catalog: virtual models managed by an administrator, and which of them are active on an
// account. Every lookup reads the store (a point read), so a model added or changed appears on the
// next request on every instance, with no restart and no cache to invalidate.
import { voicemailProblem } from '../shared/voicemail-schema.ts';
import { agentToolsProblem } from './agent-tools.ts';
import { analysisProblem } from '../shared/analysis-schema.ts';
import { randomBytes } from 'node:crypto';
import { ApiError, echo } from '../errors.ts';
import type { Store } from '../store/port.ts';
import type { Clock } from '../shared/common.ts';
import { validCallerId } from '../shared/phones.ts';
import { CARRIERS, IN_PROCESS_PROVIDERS } from '../providers/index.ts';
import type { ModelDoc, ModelFields, ModelType, Pricing, RouteConfig, SttMode, SttTimestamps, VoiceFeature } from './types.ts';

/** An administrator's restriction of an account to a list of models (absent: every model). */
interface AccessDoc {
  _id: string; // 'user:<id>' | 'org:<id>'
  models: string[];
  updated_at: Date;
  [k: string]: unknown;
}

/** A model as an administrator writes it: a voice model may leave out `pricing` (its price is its own field) and `voices` (its tts_model's). */
export type ModelInput = Omit<ModelFields, 'pricing'> & { pricing?: Pricing };

/** Which pricing fields and public fields each model type uses. */
const PRICING_BY_TYPE: Record<ModelType, (keyof Pricing)[]> = {
  llm: ['input_cents_per_mtok', 'cached_input_cents_per_mtok', 'output_cents_per_mtok'],
  embedding: ['input_cents_per_mtok'],
  stt: ['cents_per_minute'],
  voice: [], // a voice model's price is its own field, price_per_minute_cents
  tts: ['cents_per_1k_chars'],
  intent: ['cents_per_call'],
};

/** Every pricing field some model type uses. */
export const PRICING_FIELDS: readonly (keyof Pricing)[] = [...new Set(Object.values(PRICING_BY_TYPE).flat())];

const NEEDS_ROUTES: readonly ModelType[] = ['llm', 'embedding', 'stt', 'tts', 'voice'];

export interface PublicModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  type: ModelType;
  reasoning?: boolean;
  tools?: boolean;
  languages?: string[];
  streaming?: boolean;
  modes?: SttMode[];
  timestamps?: SttTimestamps;
  jobs?: boolean;
  diarization?: boolean;
  voices?: string[];
  max_input_chars?: number;
  countries?: string[];
  price_per_minute_cents?: number;
  max_duration_seconds?: number;
  features?: VoiceFeature[];
  /** voice: the names of the tools its calls' LLM agents have (never their URLs or secret). */
  agent_tools?: string[];
}

export class ModelCatalog {
  private readonly models;
  private readonly access;

  constructor(
    store: Store,
    /** Provider names with a folder under src/providers/ (a route must name one). */
    private readonly providers: readonly string[],
    private readonly now: Clock,
  ) {
    this.models = store.collection<ModelDoc>('models');
    this.access = store.collection<AccessDoc>('model_access');
  }

  /** Creates the seeded models that do not exist yet (an administrator's later changes win). */
  async seed(models: (ModelInput & { id: string })[]): Promise<void> {
    const seeded = new Map(models.map(({ id, ...def }) => [id, def]));
    for (const { id, ...input } of models) {
      validateModel(id, input, this.providers);
      // A voice model's default voices come from its tts model, seeded beside it or stored.
      const def = await this.#completed(input, async (tts) => seeded.get(tts) ?? (await this.models.findOne({ _id: tts })));
      const at = new Date(this.now());
      await this.models.updateOne({ _id: id }, { $setOnInsert: { ...def, created_at: at, updated_at: at, revision: newRevision() } }, { upsert: true });
    }
    // Models stored before revisions existed get one, so route resolution (RouteResolver) keys them
    // by it instead of serializing their routes on every call.
    await this.models.updateMany({ revision: { $exists: false } }, { $set: { revision: newRevision() } });
  }

  async put(id: string, input: ModelInput): Promise<{ model: ModelDoc; created: boolean }> {
    validateModel(id, input, this.providers);
    const def = await this.#completed(input, (tts) => this.models.findOne({ _id: tts }));
    const at = new Date(this.now());
    const existing = await this.models.findOne({ _id: id });
    const doc: ModelDoc = { _id: id, ...def, created_at: existing?.created_at ?? at, updated_at: at, revision: newRevision() };
    await this.models.replaceOne({ _id: id }, doc, { upsert: true });
    return { model: doc, created: !existing };
  }

  /**
   * The model as stored: `pricing` as given or `{}` (a voice model's price is price_per_minute_cents);
   * a voice model without `voices` gets its tts model's, as they are now (docs/api/voice.md), and is
   * refused when that model is not a tts model with voices.
   */
  async #completed(input: ModelInput, find: (id: string) => Promise<ModelInput | null | undefined>): Promise<ModelFields> {
    const def: ModelFields = { ...input, pricing: input.pricing ?? {} };
    if (def.type !== 'voice' || def.voices !== undefined) return def;
    const tts = await find(def.tts_model!);
    if (tts?.type !== 'tts' || !tts.voices?.length) {
      throw new ApiError(
        'invalid_request',
        `A voice model needs voices: give 'voices', or make its tts_model '${echo(def.tts_model!)}' a tts model with voices first, whose voices it then takes.`,
        { param: 'voices' },
      );
    }
    return { ...def, voices: [...tts.voices] };
  }

  async remove(id: string): Promise<boolean> {
    return (await this.models.deleteOne({ _id: id })).deletedCount === 1;
  }

  async list(): Promise<ModelDoc[]> {
    return this.models.find({}, { sort: { _id: 1 }, limit: 10_000 });
  }

  async get(id: string): Promise<ModelDoc | null> {
    return this.models.findOne({ _id: id });
  }

  async setAccess(account: string, models: string[] | null): Promise<void> {
    if (models === null) await this.access.deleteOne({ _id: account });
    else await this.access.replaceOne({ _id: account }, { _id: account, models: [...new Set(models)], updated_at: new Date(this.now()) }, { upsert: true });
  }

  async getAccess(account: string): Promise<string[] | null> {
    return (await this.access.findOne({ _id: account }))?.models ?? null;
  }

  /** The models active on an account, in id order. */
  async activeFor(account: string): Promise<ModelDoc[]> {
    const [all, allowed] = await Promise.all([this.list(), this.getAccess(account)]);
    return allowed ? all.filter((m) => allowed.includes(m._id)) : all;
  }

  /**
   * The model a /v1 call names, if it exists, is of the endpoint's type (any type when none is
   * given: GET /v1/models/{id}) and is active on the account; otherwise 404 model_not_found (the
   * same answer for all three, so nothing leaks).
   */
  async resolve(id: unknown, type: ModelType | null, account: string): Promise<ModelDoc> {
    const notFound = () => new ApiError('model_not_found', `The model '${echo(id)}' does not exist or is not available to your account.`, { param: 'model' });
    if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw notFound();
    const [model, allowed] = await Promise.all([this.get(id), this.getAccess(account)]);
    if (!model || (type !== null && model.type !== type) || (allowed && !allowed.includes(id))) throw notFound();
    return model;
  }
}

const newRevision = (): string => randomBytes(8).toString('hex');

export function publicModel(m: ModelDoc): PublicModel {
  const out: PublicModel = {
    id: m._id,
    object: 'model',
    created: Math.floor(m.created_at.getTime() / 1000),
    owned_by: m.owned_by,
    type: m.type,
  };
  if (m.type === 'llm') {
    out.reasoning = m.reasoning ?? false;
    out.tools = m.tools ?? false;
  }
  if (m.type === 'stt' || m.type === 'intent' || m.type === 'tts' || m.type === 'voice') out.languages = m.languages ?? [];
  if (m.type === 'stt') {
    out.streaming = m.streaming ?? false;
    Object.assign(out, sttFeatures(m));
  }
  if (m.type === 'tts') {
    out.voices = m.voices ?? [];
    out.max_input_chars = maxInputChars(m);
  }
  if (m.type === 'voice') Object.assign(out, voiceFeatures(m));
  if (m.type === 'voice' && m.agent_tools?.tools) out.agent_tools = m.agent_tools.tools.map((t) => t.function.name);
  return out;
}

/** The longest call a voice model allows when it does not say (the 1 hour cap is the schema's maximum). */
export const DEFAULT_VOICE_MAX_DURATION_SECONDS = 3600;

/** What a voice model offers, defaults filled in: what `/v1/models` shows and calls are checked against. */
export function voiceFeatures(m: ModelFields): {
  voices: string[];
  countries: string[];
  price_per_minute_cents: number;
  max_duration_seconds: number;
  features: VoiceFeature[];
} {
  return {
    voices: m.voices ?? [],
    countries: m.countries ?? [],
    price_per_minute_cents: m.price_per_minute_cents ?? 0,
    max_duration_seconds: m.max_duration_seconds ?? DEFAULT_VOICE_MAX_DURATION_SECONDS,
    features: m.features ?? [],
  };
}

/** The default of a tts model's `max_input_chars` (OpenAI's limit). */
export const DEFAULT_MAX_INPUT_CHARS = 4096;

export function maxInputChars(m: ModelFields): number {
  return m.max_input_chars ?? DEFAULT_MAX_INPUT_CHARS;
}

/** What an stt model offers, defaults filled in: the fields `/v1/models` shows and requests are checked against. */
export function sttFeatures(m: ModelFields): { modes: SttMode[]; timestamps: SttTimestamps; jobs: boolean; diarization: boolean } {
  return { modes: m.modes ?? ['transcribe'], timestamps: m.timestamps ?? 'segment', jobs: m.jobs ?? false, diarization: m.diarization ?? false };
}

/** What the admin view shows of a route: everything but the inline upstream key, of which only `api_key_set`. */
export function adminModel(m: ModelDoc): Record<string, unknown> {
  const { _id, created_at, updated_at, routes, revision: _internal, ...rest } = m;
  return {
    id: _id,
    ...rest,
    routes: routes.map(({ api_key, ...r }: RouteConfig) => ({ ...r, api_key_set: api_key !== undefined && api_key !== '' })),
    created_at: created_at.toISOString(),
    updated_at: updated_at.toISOString(),
  };
}

/**
 * A voice model's routes are carriers and nothing else is: `simulator` takes no fields, `twilio`
 * needs account_sid, its auth token (api_key or api_key_env) and from (E.164); `exotel` those and
 * api_token, its from an ExoPhone in E.164 or written 0XXXXXXXXXX, and app_id when its calls go
 * through a flow (Exotel's v1 `Calls/connect`).
 */
function validateCarrier(type: ModelType, r: RouteConfig, at: string): void {
  const bad = (param: string, message: string) => new ApiError('invalid_request', message, { param: `${at}${param}` });
  const carrier = CARRIERS.includes(r.provider);
  if (type === 'voice' && !carrier) throw bad('.provider', `A voice model's routes are carriers (${CARRIERS.join(', ')}), not '${r.provider}'.`);
  if (type !== 'voice' && carrier) throw bad('.provider', `'${r.provider}' is a telephony carrier: only voice models route to it.`);
  if (!carrier) {
    if (r.upstream_model === undefined) throw bad('.upstream_model', 'upstream_model is required.');
    for (const field of ['account_sid', 'api_token', 'from', 'app_id'] as const)
      if (r[field] !== undefined) throw bad(`.${field}`, `${field} applies to carrier routes only.`);
    return;
  }
  if (r.upstream_model !== undefined) throw bad('.upstream_model', 'A carrier route takes no upstream_model.');
  if (r.provider === 'simulator') {
    for (const field of ['account_sid', 'api_token', 'from', 'app_id'] as const)
      if (r[field] !== undefined) throw bad(`.${field}`, `A simulator route takes no ${field}.`);
    return;
  }
  if (r.account_sid === undefined) throw bad('.account_sid', `A ${r.provider} route needs account_sid.`);
  if (r.api_key === undefined && r.api_key_env === undefined) throw bad('.api_key', `A ${r.provider} route needs api_key or api_key_env.`);
  if (r.from === undefined) throw bad('.from', `A ${r.provider} route needs from (the caller id).`);
  if (!validCallerId(r.from)) throw bad('.from', `'${r.from}' is not a phone number (E.164, or an ExoPhone written 0XXXXXXXXXX).`);
  if (r.provider === 'twilio' && !r.from.startsWith('+')) throw bad('.from', 'A twilio route calls from an E.164 number (+…).');
  if (r.provider === 'twilio' && r.app_id !== undefined) throw bad('.app_id', 'app_id is an exotel flow: a twilio route takes none.');
  if (r.provider === 'exotel' && r.api_token === undefined) throw bad('.api_token', 'An exotel route needs api_token.');
  if (r.provider === 'twilio' && r.api_token !== undefined) throw bad('.api_token', 'A twilio route takes no api_token (its auth token is api_key).');
}

function validateModel(id: string, def: ModelInput, providers: readonly string[]): void {
  const bad = (param: string, message: string) => new ApiError('invalid_request', message, { param });
  if (!/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/.test(id)) throw bad('id', 'A model id is 1-128 letters, digits, and . _ : / - characters.');
  if (NEEDS_ROUTES.includes(def.type) && def.routes.length === 0) throw bad('routes', `A ${def.type} model needs at least one route.`);
  const allowedPricing = PRICING_BY_TYPE[def.type];
  if (def.pricing === undefined && def.type !== 'voice') throw bad('pricing', `A ${def.type} model needs pricing (${allowedPricing.join(', ')}).`);
  const pricing = def.pricing ?? {};
  for (const key of Object.keys(pricing) as (keyof Pricing)[]) {
    if (allowedPricing.includes(key)) continue;
    // A voice model has no pricing fields: its one price is a field of its own.
    const use = allowedPricing.length > 0 ? `use pricing.${allowedPricing.join(', pricing.')}` : "use 'price_per_minute_cents' (beside pricing, not in it)";
    throw bad(`pricing.${key}`, `pricing.${key} does not apply to ${def.type} models; ${use}.`);
  }
  const { cached_input_cents_per_mtok: cached, input_cents_per_mtok: input } = pricing;
  if (cached !== undefined && cached > (input ?? 0)) {
    // A hold is estimated at the input price: a cache read must not cost more than it.
    throw bad('pricing.cached_input_cents_per_mtok', 'cached_input_cents_per_mtok may not exceed input_cents_per_mtok.');
  }
  def.routes.forEach((r, i) => {
    if (!providers.includes(r.provider)) throw bad(`routes.${i}.provider`, `Unknown provider '${r.provider}'; known: ${providers.join(', ')}.`);
    validateCarrier(def.type, r, `routes.${i}`);
    if (r.api_key && r.api_key_env) throw bad(`routes.${i}`, 'Give api_key or api_key_env, not both.');
    if (IN_PROCESS_PROVIDERS.includes(r.provider)) {
      if (r.base_url !== undefined || r.api_key !== undefined || r.api_key_env !== undefined) {
        throw bad(`routes.${i}`, `A '${r.provider}' route runs in the gateway: it takes no base_url and no key.`);
      }
      return;
    }
    if (r.base_url === undefined) {
      if (CARRIERS.includes(r.provider)) return; // the carrier's public API
      throw bad(`routes.${i}.base_url`, 'base_url is required.');
    }
    let url: URL;
    try {
      url = new URL(r.base_url);
    } catch {
      throw bad(`routes.${i}.base_url`, 'base_url must be an absolute http(s) URL.');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(`routes.${i}.base_url`, 'base_url must be http or https.');
  });
  if (def.type !== 'llm' && def.tools !== undefined) throw bad('tools', 'tools applies to llm models only.');
  if (def.type !== 'stt') {
    for (const field of ['modes', 'timestamps', 'jobs', 'diarization'] as const) {
      if (def[field] !== undefined) throw bad(field, `${field} applies to stt models only.`);
    }
  }
  if (def.type === 'voice') {
    for (const field of ['stt_model', 'tts_model', 'price_per_minute_cents', 'countries'] as const) {
      if (def[field] === undefined) throw bad(field, `A voice model needs ${field}.`);
    }
    const voicemail = def.voicemail && voicemailProblem(def.voicemail);
    if (voicemail) throw bad(`voicemail.${voicemail.field}`, voicemail.message);
    const tools = def.agent_tools && agentToolsProblem(def.agent_tools);
    if (tools) throw bad(tools.param, tools.message);
    const analysis = def.analysis && analysisProblem(def.analysis);
    if (analysis) throw bad(`analysis.${analysis.field}`, analysis.message);
  } else {
    for (const field of [
      'stt_model',
      'tts_model',
      'intent_model',
      'price_per_minute_cents',
      'countries',
      'max_duration_seconds',
      'features',
      'record',
      'recording_retention_days',
      'voicemail',
      'agent_tools',
      'analysis',
    ] as const) {
      if (def[field] !== undefined) throw bad(field, `${field} applies to voice models only.`);
    }
  }
  if (def.type !== 'tts' && def.max_input_chars !== undefined) throw bad('max_input_chars', 'max_input_chars applies to tts models only.');
  if (def.context_window !== undefined && def.max_output_tokens !== undefined && def.max_output_tokens > def.context_window) {
    throw bad('max_output_tokens', 'max_output_tokens cannot exceed context_window.');
  }
}
