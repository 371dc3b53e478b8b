// POST /v1/understand, the metered path (the same order as chat):
//   validate → resolve the model (type intent) on the payer's account → language → KYC → per-key
//   limits → hold the per-call price → dialogue act, entities, cascade (and the llm fallback when
//   the model has routes) → the session actor decides → settle exactly once (release on failure).
// One charge per call, whatever stage resolved the turn.
import { performance } from 'node:perf_hooks';
import type { Counter, Histogram } from 'prom-client';
import { ApiError } from '../errors.ts';
import { priceOfCalls } from '../billing/pricing.ts';
import type { Meter } from '../metering/meter.ts';
import type { ModelDoc } from '../models/types.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { Choice, TurnEvent, TurnOutcome, TurnOutcomeEvent } from '../../machines/intent-session.machine.ts';
import { dialogueAct, ordinalChoice } from './acts.ts';
import { bareNumber } from './amounts.ts';
import { extractEntities } from './entities.ts';
import type { CascadeResult, CompiledPack } from './engine.ts';
import { normalize } from './normalize.ts';
import type { PackRegistry } from './packs.ts';
import { llmFallback } from './llm.ts';
import type { intentSessionKind } from './kind.ts';
import type { ActorRef } from '../actors/runtime.ts';

/** A session actor's handle: `runtime.ref(intentSessionKind, id)`. */
export type SessionRef = (actorId: string) => ActorRef<typeof intentSessionKind>;

export interface UnderstandBody {
  model: string;
  session_id?: string;
  text?: string;
  language?: string;
  channel?: 'text' | 'voice';
}

export interface UnderstandResponse {
  model: string;
  session_id: string;
  request_id: string;
  classification: CascadeResult['classification'];
  intent: CascadeResult['intent'];
  candidate_intents: { id: string; score: number; source: string }[];
  entities: Record<string, string | number>;
  dialogue_act: string;
  decision: { action: string; next_state: string; response_id: string };
  response: { response_id: string; language: string; channel: string };
  classifier_used: string;
  latency_ms: number;
}

/** Where turns are counted (src/http/metrics.ts). */
export interface IntentMetrics {
  turns: Counter<'model' | 'classification' | 'classifier_used'>;
  cascade: Histogram<'classifier_used'>;
}

export interface IntentDeps {
  meter: Meter;
  packs: PackRegistry;
  sessions: SessionRef;
  router: UpstreamRouter;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  now(): number;
  sessionIdleMs: number;
  metrics?: IntentMetrics;
}

/** The intents to offer after an AMBIGUOUS turn: the local model's candidates within the pack's margin of the best. */
function choicesOf(pack: CompiledPack, result: CascadeResult): Choice[] {
  const local = result.candidates.filter((c) => c.source === 'local_model');
  const best = local[0]?.score ?? 0;
  return local.flatMap((c) => {
    const decisions = best - c.score <= pack.thresholds.margin ? pack.decisionsFor(c.id) : null;
    return decisions ? [{ id: c.id, decisions }] : [];
  });
}

export class IntentService {
  constructor(private readonly deps: IntentDeps) {}

  /** The pack a model names (`pack`, else a pack with the model's id). */
  static packIdOf(model: ModelDoc): string {
    return typeof model.pack === 'string' ? model.pack : model._id;
  }

  async understand(principal: ApiKeyPrincipal, body: UnderstandBody, requestId: string): Promise<UnderstandResponse> {
    const started = performance.now();
    if (typeof body.session_id !== 'string' || body.session_id.length === 0) {
      throw new ApiError('missing_input', 'session_id is required: the client conversation id.', { param: 'session_id' });
    }
    if (typeof body.text !== 'string' || body.text.trim().length === 0) {
      throw new ApiError('missing_input', 'text is required: the turn to understand.', { param: 'text' });
    }
    const call = await this.deps.meter.begin(principal, {
      model: body.model,
      type: 'intent',
      requestId,
      check: async (model) => {
        const wanted = body.language ?? 'en-IN';
        const language = (model.languages ?? []).find((l) => l.toLowerCase() === wanted.toLowerCase());
        if (!language) {
          throw new ApiError(
            'language_not_supported',
            `The model '${model._id}' offers ${(model.languages ?? []).join(', ') || 'no languages'}, not '${wanted}'.`,
            { param: 'language' },
          );
        }
        const pack = await this.deps.packs.compiledPack(IntentService.packIdOf(model));
        if (!pack) throw new ApiError('model_misconfigured', `The model '${model._id}' names an intent pack that is not loaded.`);
        return { language, pack, price: priceOfCalls(model.pricing, 1) };
      },
      estimate: (_model, checked) => checked.price,
    });
    const { language, pack, price } = call.checked;
    try {
      // The session of this key only: the same session_id on another key is another actor.
      const { response } = await this.turn(
        `${principal.keyId}:${body.session_id}`,
        body.session_id,
        body.text,
        language,
        body.channel ?? 'text',
        call.model,
        pack,
        requestId,
      );
      await call.settle({ route: null, calls: 1, costMicrocents: price, status: 'ok' });
      return { ...response, latency_ms: Math.max(0, Math.round(performance.now() - started)) };
    } catch (err) {
      await call.release('error', { calls: 0 });
      throw err;
    }
  }

  /**
   * One turn of a voice call's conversation (src/voice/agent.ts): the same cascade and session
   * logic as /v1/understand, on the session `voice:<callId>`, unmetered (the call's per-minute
   * price covers it). Answers the outcome and the wording of its response for the voice channel.
   */
  async converse(
    callId: string,
    model: ModelDoc,
    text: string,
    language: string,
    requestId: string,
  ): Promise<Omit<UnderstandResponse, 'latency_ms'> & { collected: Record<string, string | number>; say: string | null }> {
    const pack = await this.deps.packs.compiledPack(IntentService.packIdOf(model));
    if (!pack) throw new ApiError('model_misconfigured', `The model '${model._id}' names an intent pack that is not loaded.`);
    const { response, collected } = await this.turn(`voice:${callId}`, callId, text, language, 'voice', model, pack, requestId);
    return { ...response, collected, say: responseWording(pack, response.decision.response_id, language) };
  }

  /** The pack a call's agent runs on (null when it is not loaded). */
  async packOf(model: ModelDoc): Promise<CompiledPack | null> {
    return this.deps.packs.compiledPack(IntentService.packIdOf(model));
  }

  private async turn(
    actorId: string,
    sessionId: string,
    text: string,
    language: string,
    channel: string,
    model: ModelDoc,
    pack: CompiledPack,
    requestId: string,
  ): Promise<{ response: Omit<UnderstandResponse, 'latency_ms'>; collected: Record<string, string | number> }> {
    const now = this.deps.now();
    const norm = normalize(text);
    const { act, yesNo } = dialogueAct(norm, text);
    const entities = extractEntities(norm, now);
    const cascadeStarted = performance.now();
    let result = pack.classify(norm);
    // A bare yes/no, a bare number ("299", "299 ka tha") or a pick ("the second one") answers a
    // question the session asked: no LLM can classify it.
    const number = bareNumber(norm.plain);
    const ordinal = ordinalChoice(norm.tokens);
    const answer = yesNo !== null || ordinal !== null || (number !== null && norm.tokens.length <= 3);
    if ((result.classification === 'AMBIGUOUS' || result.classification === 'UNKNOWN') && model.routes.length > 0 && !answer) {
      result = await llmFallback(this.deps.router, this.deps.resolveRoutes(model), pack, text, result);
    }
    const cascadeSeconds = (performance.now() - cascadeStarted) / 1000;
    const event: TurnEvent = {
      type: 'turn',
      now,
      idleMs: this.deps.sessionIdleMs,
      requestId,
      act,
      yesNo,
      entities: entities as TurnEvent['entities'],
      number,
      ordinal,
      ...(result.classification === 'AMBIGUOUS' ? { choices: choicesOf(pack, result) } : {}),
      result: { classification: result.classification, intent: result.intent, candidates: result.candidates, classifier_used: result.classifier_used },
      decisions: result.intent ? pack.decisionsFor(result.intent.id) : null,
      fallback: pack.pack.fallback,
    };
    const outcome = await this.send(actorId, event);
    this.deps.metrics?.cascade.observe({ classifier_used: result.classifier_used }, cascadeSeconds);
    this.deps.metrics?.turns.inc({ model: model._id, classification: outcome.classification, classifier_used: outcome.classifier_used });
    const response = {
      model: model._id,
      session_id: sessionId,
      request_id: requestId,
      classification: outcome.classification,
      intent: outcome.intent as CascadeResult['intent'],
      candidate_intents: outcome.candidates,
      entities: outcome.entities as Record<string, string | number>,
      dialogue_act: outcome.dialogue_act,
      decision: outcome.decision,
      response: { response_id: outcome.decision.response_id, language, channel },
      classifier_used: outcome.classifier_used,
    };
    return { response, collected: outcome.collected as Record<string, string | number> };
  }

  /**
   * The turn's outcome is the session actor's reply, given once the transition is applied; the
   * session is written by its checkpoint policy (src/intent/kind.ts).
   */
  private async send(actorId: string, event: TurnEvent): Promise<TurnOutcome> {
    const { reply } = await this.deps.sessions(actorId).askOrSpawn<TurnOutcomeEvent>(undefined, event, { wait: 'applied' });
    if (reply.type !== 'turn.outcome' || reply.outcome.requestId !== event.requestId) throw new Error('intent session did not record the turn');
    return reply.outcome;
  }
}

/** A response's wording for the voice channel in `language` (its text when it has no voice wording); null when the pack has none. */
export function responseWording(pack: CompiledPack, responseId: string, language: string): string | null {
  const texts = Object.hasOwn(pack.pack.responses, responseId) ? pack.pack.responses[responseId] : undefined;
  const wording = texts && Object.hasOwn(texts, language) ? texts[language] : undefined;
  return wording ? (wording.voice ?? wording.text ?? null) : null;
}
