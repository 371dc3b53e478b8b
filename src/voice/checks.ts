// The rules of a call (POST /v1/voice/call), checked before it exists: its request body
// (`VoiceCallBody`) against the model (destination country, caller id, language, voice, agent and
// its pack, the stt and tts models, a carrier this build can dial through) and the wallet (the
// reservation's length: min(max duration, what the wallet affords), refused under the least a call
// needs). `check` runs inside the Meter's `begin`, before the hold; what it settles (`Checked`) is
// what src/voice/service.ts places the call with.
import { ApiError, echo } from '../errors.ts';
import { callerIdE164, phoneNumbers } from '../shared/phones.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import { voiceFeatures } from '../models/catalog.ts';
import type { ModelDoc, RouteConfig } from '../models/types.ts';
import type { Payer } from '../billing/types.ts';
import type { IntentService } from '../intent/service.ts';
import type { Carrier } from '../providers/carrier.ts';
import type { LivePlan } from './live.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import { matchLanguage, primaryLanguage } from '../speech/languages.ts';
import { centsOf, callPrice } from './kind.ts';
import { checkTools, DEFAULT_TOOL_TIMEOUT_MS, type ToolCheckDeps, type ToolFields } from './tool-requests.ts';
import type { Voicemail } from '../shared/voicemail-schema.ts';
import { checkVoicemail } from './voicemail.ts';
import { modelTools, modelToolSettings } from './model-tools.ts';
import type { AnalysisRequest } from '../shared/analysis-schema.ts';
import { checkAnalysis } from './analysis.ts';

const DEFAULT_MAX_DURATION_SECONDS = 600;
const DEFAULT_ENDPOINTING_MS = 700;
/** The silence that ends a turn while digits are expected (an account number read in groups pauses longer). */
const DEFAULT_DIGITS_ENDPOINTING_MS = 1500;

/** The body of POST /v1/voice/call, as its schema (src/http/routes/v1-voice.ts) validated it. */
export interface VoiceCallBody extends Omit<ToolFields, 'agent'> {
  model: string;
  to: string;
  from?: string;
  agent?:
    | { type: 'intent'; intent_model: string }
    | { type: 'llm'; llm_model: string; system_prompt: string }
    | { type: 'hybrid'; intent_model: string; llm_model: string; system_prompt: string };
  language?: string;
  voice?: string;
  first_message?: { response_id?: string; text?: string; mode?: 'agent_first' | 'wait_for_callee' | 'after_silence' };
  variables?: Record<string, string>;
  max_duration_seconds?: number;
  ring_timeout_seconds?: number;
  idle?: { prompt_after_ms?: number; max_prompts?: number };
  turn?: { endpointing_ms?: { min?: number; max?: number }; interruption?: { enabled?: boolean; min_speech_ms?: number; ignore?: string[] } };
  webhook_id?: number;
  metadata?: Record<string, string>;
  /** Where the pack's escalation to a person transfers the call (src/voice/transfer.ts); checked as `to` is. */
  transfer_to?: string;
  /** Record both sides (src/voice/recordings.ts); default the model's `record`. */
  record?: boolean;
  /** Said before the first message when the call is recorded. */
  recording_notice?: string;
  voicemail?: Voicemail;
  /** What to learn of the conversation once the call ends (src/voice/analysis.ts); default the model's. */
  analysis?: AnalysisRequest;
}

/** What `check` asks of the gateway (a part of the voice service's dependencies). */
export interface CheckDeps extends ToolCheckDeps {
  models: Pick<ModelCatalog, 'get' | 'resolve'>;
  /** The carrier for a model's route (its configuration and its resolved key); undefined: none in this build. */
  carrier(config: RouteConfig, route: ResolvedRoute): Carrier | undefined;
  /** What the payer's wallet can still hold, µ¢. */
  available(payer: Payer): Promise<number>;
  /** Whether webhook `id` is the account's (a call's `webhook_id`). */
  webhookOwned(account: string, id: number): Promise<boolean>;
  intent: Pick<IntentService, 'packOf'>;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  settings: CheckSettings;
}

export interface CheckSettings {
  /** A call the wallet cannot cover for this long is refused (402). */
  minAffordableSeconds: number;
  /** How long a tool request waits for the integrator's answer when the call does not say (voice.toolTimeoutMs). */
  toolTimeoutMs?: number;
}

/** What `check` settled about a call, before its hold (what its live side reads: `LivePlan`, src/voice/live.ts). */
export interface Checked extends LivePlan {
  to: string;
  price: number;
  /** The call's analysis (its own or its model's), checked; null: none. */
  analysis: AnalysisRequest | null;
}

/** The model's rules on the call; the reservation's length from what the wallet affords. */
export async function check(deps: CheckDeps, model: ModelDoc, payer: Payer, body: VoiceCallBody, inbound = false): Promise<Checked> {
  const turn = endpointing(body);
  if (turn.max < turn.min) {
    throw new ApiError('invalid_request', `'turn.endpointing_ms.max' (${turn.max}) must be at least 'turn.endpointing_ms.min' (${turn.min}).`, {
      param: 'turn.endpointing_ms.max',
    });
  }
  const features = voiceFeatures(model);
  // An inbound call's `to` is the model's own number and its `from` the caller (src/voice/inbound.ts): nothing to allow.
  const to = inbound ? body.to : destination(model, body.to, 'to');
  if (body.transfer_to !== undefined) destination(model, body.transfer_to, 'transfer_to');
  if (body.webhook_id !== undefined && !(await deps.webhookOwned(payer.walletId, body.webhook_id))) {
    throw new ApiError('invalid_request', `'webhook_id' must be one of your account's webhooks, not ${body.webhook_id}.`, { param: 'webhook_id' });
  }
  // An ExoPhone may be written +91… or 0…: the same number either way.
  if (!inbound && body.from !== undefined && !model.routes.some((r) => r.from !== undefined && callerIdE164(r.from) === callerIdE164(body.from!))) {
    throw new ApiError('invalid_request', `'from' must be a caller id one of the model's carrier routes owns.`, { param: 'from' });
  }
  const languages = model.languages ?? [];
  const language = body.language === undefined ? languages[0] : matchLanguage(body.language, languages);
  if (!language)
    throw new ApiError(
      'language_not_supported',
      `The model '${model._id}' speaks ${languages.join(', ') || 'no languages'}, not '${echo(body.language ?? '')}'.`,
      { param: 'language' },
    );
  const voice = body.voice ?? features.voices.find((v) => v.split('-')[0] === primaryLanguage(language)) ?? features.voices[0];
  if (voice === undefined || !features.voices.includes(voice)) {
    throw new ApiError(
      'voice_not_supported',
      `The model '${model._id}' offers the voices ${features.voices.join(', ') || 'none'}, not '${echo(voice ?? '')}'.`,
      { param: 'voice' },
    );
  }
  const agent = body.agent ?? (model.intent_model ? { type: 'intent' as const, intent_model: model.intent_model } : undefined);
  if (agent === undefined) throw new ApiError('invalid_request', `The model '${model._id}' has no default agent; give 'agent'.`, { param: 'agent' });
  let intentModel: ModelDoc | null = null;
  let agentPack: { responses: object } | null = null; // a voicemail's response_id is its
  if (agent.type === 'intent' || agent.type === 'hybrid') {
    intentModel = await deps.models.resolve(agent.intent_model, 'intent', payer.walletId).catch(() => {
      throw new ApiError('invalid_request', `'agent.intent_model' must be an intent model available to your account, not '${echo(agent.intent_model)}'.`, {
        param: 'agent.intent_model',
      });
    });
    const pack = await deps.intent.packOf(intentModel);
    if (!pack) throw new ApiError('model_misconfigured', `The intent model '${intentModel._id}' names a pack that is not loaded.`);
    if (!pack.pack.languages.includes(language)) {
      throw new ApiError('language_not_supported', `The agent's pack speaks ${pack.pack.languages.join(', ')}, not '${language}'.`, { param: 'language' });
    }
    agentPack = pack.pack;
    const responseId = body.first_message?.response_id;
    if (responseId !== undefined && !Object.hasOwn(pack.pack.responses, responseId)) {
      throw new ApiError('invalid_request', `The agent's pack has no response '${echo(responseId)}'.`, { param: 'first_message.response_id' });
    }
  } else if (body.first_message?.response_id !== undefined) {
    throw new ApiError('invalid_request', 'An llm agent has no pack: give first_message.text.', { param: 'first_message.response_id' });
  }
  const voicemail = checkVoicemail(body.voicemail, model, agentPack);
  let llmModel: ModelDoc | null = null;
  if (agent.type === 'llm' || agent.type === 'hybrid') {
    llmModel = await deps.models.resolve(agent.llm_model, 'llm', payer.walletId).catch(() => {
      throw new ApiError('invalid_request', `'agent.llm_model' must be an llm model available to your account, not '${echo(agent.llm_model)}'.`, {
        param: 'agent.llm_model',
      });
    });
  }
  const analysis = await checkAnalysis(deps, model, payer, body.analysis);
  const [stt, tts] = await Promise.all([deps.models.get(model.stt_model ?? ''), deps.models.get(model.tts_model ?? '')]);
  if (stt?.type !== 'stt' || !tts || tts.type !== 'tts')
    throw new ApiError('model_misconfigured', `The model '${model._id}' names stt or tts models that do not exist.`);
  const carriers = deps.resolveRoutes(model).flatMap((r, route) => {
    const carrier = r.problem ? undefined : deps.carrier(model.routes[route]!, r);
    return carrier ? [{ route, carrier }] : [];
  });
  if (carriers.length === 0)
    throw new ApiError('model_unavailable', `The model '${model._id}' has no carrier this gateway can dial through.`, { headers: { 'retry-after': '60' } });
  const maxSeconds = Math.min(body.max_duration_seconds ?? DEFAULT_MAX_DURATION_SECONDS, features.max_duration_seconds);
  // The credit guard: the reservation covers min(max duration, what the wallet affords).
  const price = callPrice(features.price_per_minute_cents, 1);
  const affordable = price > 0 ? Math.floor((await deps.available(payer)) / price) : Infinity;
  const floor = deps.settings.minAffordableSeconds;
  if (affordable < floor) {
    const perMinute = features.price_per_minute_cents;
    throw new ApiError(
      'insufficient_credit',
      `A call needs at least ${floor} s of credit (${centsOf(price * floor)} cents at ${perMinute} cents a minute); your wallet covers ${affordable} s. Top up first.`,
    );
  }
  // The call's tools and its model's (the operator's: src/voice/model-tools.ts).
  const settings = modelToolSettings(model, deps.settings.toolTimeoutMs ?? DEFAULT_TOOL_TIMEOUT_MS);
  const tools = await checkTools(deps, payer.walletId, { ...body, agent }, modelTools(deps, model, agent.type), settings);
  return {
    to,
    language,
    voice,
    reservedSeconds: Math.min(maxSeconds, affordable),
    maxSeconds,
    stt,
    tts,
    intentModel,
    llmModel,
    carriers,
    price,
    voicemail,
    tools,
    analysis,
  };
}

/**
 * A number the model's calls may reach (a call's `to`, a transfer's): valid E.164 (libphonenumber-js's
 * full metadata), else 400 `invalid_request`; in one of the model's `countries`, else 400
 * `destination_not_allowed`; `param` names the field. Returns it as E.164.
 */
export function destination(model: ModelDoc, to: string, param: string): string {
  const { countries } = voiceFeatures(model);
  const phone = phoneNumbers().parsePhoneNumberFromString(to);
  if (!/^\+[1-9][0-9]{6,14}$/.test(to) || !phone?.isValid()) {
    throw new ApiError('invalid_request', `'${param}' must be a valid phone number in E.164 form (+919876543210), not '${echo(to)}'.`, { param });
  }
  if (!phone.country || !countries.includes(phone.country)) {
    throw new ApiError(
      'destination_not_allowed',
      `The model '${model._id}' calls ${countries.join(', ') || 'no countries'}; ${phone.number} is in ${phone.country ?? 'no single country'}.`,
      { param },
    );
  }
  return phone.number;
}

/**
 * The silence that ends the callee's turn: `min` (default 700 ms) normally; `max` (default 1500 ms,
 * or `min` when that is longer) while digits are expected (src/voice/media.ts).
 */
export function endpointing(body: VoiceCallBody): { min: number; max: number } {
  const min = body.turn?.endpointing_ms?.min ?? DEFAULT_ENDPOINTING_MS;
  return { min, max: body.turn?.endpointing_ms?.max ?? Math.max(min, DEFAULT_DIGITS_ENDPOINTING_MS) };
}
