// What happened on each call (issue 43 §2). A call's `analysis` (or its voice model's default) is
// checked at the POST (`checkAnalysis`: an llm model the account may use); after the call's charge
// its actor's `analyzing` state runs `CallAnalyzer.run`, off the media path: the transcript goes to
// the llm model through the router (the route order and failover of /v1/chat/completions) with a
// strict JSON schema built from the fields (src/voice/analysis-prompt.ts), metered through the
// Meter and billed to the call's payer as a chat call of that model (a failed request is released:
// free). Retried `attempts` times with a doubling backoff, then `failed`; the call's own status,
// end reason and bill are never touched. The `call.analyzed` event follows, once.
//
// Exactly once across kill -9 (a restore re-runs the invoke): each attempt's hold is a once-only
// step of the actor (custodial, so a dead process does not return it), the upstream's answer is
// recorded as a step before it is settled, and a settle of a hold already settled is a no-op
// (billing's), so a replay settles the recorded answer once, with the same figures.
import type { ActorKindContext } from '../actors/kinds.ts';
import { ApiError, echo } from '../errors.ts';
import type { Meter, SavedCall } from '../metering/meter.ts';
import { unservedStatus } from '../metering/outcomes.ts';
import type { ModelCatalog } from '../models/catalog.ts';
import type { ModelDoc } from '../models/types.ts';
import type { Payer, UsageFacts } from '../billing/types.ts';
import { priceOfTokens } from '../billing/pricing.ts';
import type { EventSink } from '../shared/events.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import { RouterError } from '../providers/router-error.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ChatRequest, ResolvedRoute, TokenUsage } from '../providers/types.ts';
import { countMessages, countText, PromptTokens } from '../text/tokens.ts';
import { analysisProblem, type AnalysisRequest } from '../shared/analysis-schema.ts';
import type { AnalyzeInput, CallAnalysisResult, Turn, VoiceCallContext } from '../../machines/voice-call.machine.ts';
import { analysisFormat, analysisMessages, packFields, readAnswer } from './analysis-prompt.ts';
import { centsOf, eventTarget, type CallSpecFields } from './kind.ts';
import type { CallAnalysisObject } from './views.ts';

/** The analysis's output cap, tokens (a summary and 20 short fields fit well within it). */
const MAX_OUTPUT_TOKENS = 1500;
/** A hold outlives the attempt that took it (and a restart): the sweep returns one left behind. */
const HOLD_TTL_MS = 30 * 60_000;
/** The longest an attempt waits for its answer. */
const ATTEMPT_TIMEOUT_MS = 60_000;

/**
 * The call's analysis as it runs: its own `analysis`, else its voice model's; null when neither asks.
 * 400 naming `analysis.model` when that is not an llm model the account may use.
 */
export async function checkAnalysis(
  deps: { models: Pick<ModelCatalog, 'resolve'> },
  model: ModelDoc,
  payer: Payer,
  asked: AnalysisRequest | undefined,
): Promise<AnalysisRequest | null> {
  const a = asked ?? model.analysis;
  if (!a) return null;
  const problem = analysisProblem(a);
  if (problem) throw new ApiError('invalid_request', problem.message, { param: `analysis.${problem.field}` });
  await deps.models.resolve(a.model, 'llm', payer.walletId).catch(() => {
    throw new ApiError('invalid_request', `'analysis.model' must be an llm model available to your account, not '${echo(a.model)}'.`, {
      param: 'analysis.model',
    });
  });
  return { model: a.model, summary: a.summary ?? true, fields: a.fields ?? [] };
}

export interface AnalyzerDeps {
  meter: Pick<Meter, 'begin' | 'resume'>;
  models: Pick<ModelCatalog, 'get'>;
  router: Pick<UpstreamRouter, 'complete'>;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  transcripts: { of(account: string, callId: string): Promise<Turn[]> };
  events: EventSink;
  now(): number;
  /** Upstream attempts before the analysis is `failed` (voice.analysisAttempts), and the first backoff (doubling). */
  attempts: number;
  backoffMs: number;
}

type Attempt = { result: CallAnalysisResult } | { retry: { code: string; message: string } };
/** What an attempt's once-only steps record: its hold, and the upstream's answer before it is settled. */
type Held = { saved: SavedCall; maxOut: number; prompt: number };
type Answer = { text: string; usage: TokenUsage; route: string } | { failure: { code: string; message: string }; status: UsageFacts['status'] };

export class CallAnalyzer {
  constructor(private readonly deps: AnalyzerDeps) {}

  async run(input: AnalyzeInput<CallSpecFields>, ctx: ActorKindContext): Promise<CallAnalysisResult> {
    const { spec } = input;
    const req = spec.analysis;
    const turns = await this.deps.transcripts.of(spec.payer.walletId, input.callId);
    const result = !req
      ? this.done('skipped', null, {})
      : turns.some((t) => t.role === 'callee')
        ? await this.analyze(req, input, turns, ctx)
        : this.done('skipped', req.model, {});
    await ctx.steps
      .once('notify:analyzed', async () => {
        const analysis = toAnalysisObject(result, req, spec.pack === true ? packFields(turns, input.outcome.actions) : null);
        await this.deps.events.emit({ event: 'call.analyzed', ...eventTarget(spec), fields: { call_id: input.callId, analysis } });
        return true;
      })
      .catch((err: unknown) => ctx.logger.warn({ err }, 'call.analyzed was not written'));
    return result;
  }

  private done(status: CallAnalysisResult['status'], model: string | null, more: Partial<CallAnalysisResult>): CallAnalysisResult {
    return { status, model, summary: null, fields: {}, usage: null, costMicrocents: 0, attempts: 0, error: null, at: this.deps.now(), ...more };
  }

  private async analyze(req: AnalysisRequest, input: AnalyzeInput<CallSpecFields>, turns: Turn[], ctx: ActorKindContext): Promise<CallAnalysisResult> {
    const request: ChatRequest = { messages: analysisMessages(req, turns), response_format: analysisFormat(req), temperature: 0 };
    let error = { code: 'upstream_failed', message: 'The analysis was not attempted.' };
    for (let n = 1; n <= this.deps.attempts; n++) {
      if (n > 1) await new Promise((r) => setTimeout(r, this.deps.backoffMs * 2 ** (n - 2)));
      const tried = await this.attempt(req, input, request, n, ctx).catch((err: unknown): Attempt => {
        // A refusal of the call itself (the wallet, the model gone, the prompt too long) is final.
        if (err instanceof ApiError) return { result: this.done('failed', req.model, { attempts: n, error: { code: err.code, message: err.message } }) };
        throw err;
      });
      if ('result' in tried) return tried.result;
      error = tried.retry;
      ctx.logger.warn({ attempt: n, code: error.code }, 'call analysis attempt failed');
    }
    return this.done('failed', req.model, { attempts: this.deps.attempts, error });
  }

  private async attempt(req: AnalysisRequest, input: AnalyzeInput<CallSpecFields>, request: ChatRequest, n: number, ctx: ActorKindContext): Promise<Attempt> {
    const { spec, callId } = input;
    const held = await ctx.steps.once<Held>(`analysis:hold:${n}`, async () => {
      const call = await this.deps.meter.begin(null, {
        payer: spec.payer,
        model: req.model,
        type: 'llm',
        requestId: `${callId}:analysis:${n}`,
        check: (model) => {
          const schema = JSON.stringify(request.response_format);
          const prompt = new PromptTokens((measure) => countMessages(request.messages, measure) + measure(schema));
          const maxOut = Math.min(model.max_output_tokens ?? MAX_OUTPUT_TOKENS, MAX_OUTPUT_TOKENS);
          const window = model.context_window;
          if (window !== undefined && prompt.exact + maxOut > window) {
            throw new ApiError('context_length_exceeded', `The transcript takes ${prompt.exact} tokens; the model's context window is ${window}.`);
          }
          return { prompt, maxOut };
        },
        estimate: (model, { prompt, maxOut }) => Math.ceil(priceOfTokens(model.pricing, prompt.known, maxOut)),
        tokens: ({ prompt, maxOut }) => prompt.known + maxOut,
        holdTtlMs: HOLD_TTL_MS,
        custodial: true,
      });
      return { saved: call.saved(), maxOut: call.checked.maxOut, prompt: call.checked.prompt.exact };
    });
    const metered = this.deps.meter.resume(held.saved);
    const model = await this.deps.models.get(req.model);
    if (!model) {
      await metered.release('rejected', { route: null, promptTokens: 0, completionTokens: 0 });
      throw new ApiError('model_not_found', `The model '${req.model}' no longer exists.`);
    }
    const signal = AbortSignal.any([ctx.lease().signal, AbortSignal.timeout(ATTEMPT_TIMEOUT_MS)]);
    // The answer, or why none came, is recorded before the hold is settled or released: a replay
    // finishes the hold as the first run would have, and never asks again once it was answered.
    const answer = await ctx.steps.once<Answer>(`analysis:answer:${n}`, async () => {
      try {
        const served = await this.ask(model, { ...request, max_tokens: held.maxOut }, signal);
        const text = served.result.choices[0]?.message.content ?? '';
        const usage = served.result.usage ?? { prompt_tokens: held.prompt, completion_tokens: countText(text) };
        return { text, usage, route: served.route.id };
      } catch (err) {
        if (ctx.lease().signal.aborted) throw err; // the actor moved: its new owner carries on
        const code = (err as { code?: unknown }).code;
        const failure = { code: typeof code === 'string' ? code : 'upstream_failed', message: err instanceof Error ? err.message : String(err) };
        return { failure, status: unservedStatus(err, signal) };
      }
    });
    if ('failure' in answer) {
      await metered.release(answer.status, { route: null, promptTokens: 0, completionTokens: 0 });
      return { retry: answer.failure };
    }
    const { usage } = answer;
    const cost = Math.min(held.saved.hold.amountMicrocents, priceOfTokens(model.pricing, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens));
    await metered.settle({
      route: answer.route,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      costMicrocents: cost,
      status: 'ok',
      cachedTokens: usage.cached_tokens,
      endUser: undefined,
    });
    const read = readAnswer(req, answer.text);
    const tokens = { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens };
    return { result: this.done('completed', req.model, { ...read, usage: tokens, costMicrocents: cost, attempts: n }) };
  }

  /**
   * The request through the model's routes; when none takes a JSON schema (Anthropic's Messages API
   * refuses any `response_format`: the router passes such a route by), once more without it, the
   * instructions alone asking for the JSON (readAnswer takes a fenced or flat answer too).
   */
  private async ask(model: ModelDoc, request: ChatRequest, signal: AbortSignal) {
    const routes = this.deps.resolveRoutes(model);
    try {
      return await this.deps.router.complete(routes, request, signal);
    } catch (err) {
      if (!(err instanceof RouterError && err.param === 'response_format')) throw err;
      const { response_format: _format, ...plain } = request;
      return this.deps.router.complete(routes, plain, signal);
    }
  }
}

/** The analysis as the API answers it, from what the call stored (`result`), what it asked (`req`) and its pack's decisions. */
export function toAnalysisObject(result: CallAnalysisResult | null, req: AnalysisRequest | undefined | null, pack: ReturnType<typeof packFields> | null) {
  const packed = { intent: pack?.intent ?? null, actions: pack?.actions ?? null, entities: pack?.entities ?? null };
  const object: CallAnalysisObject = {
    status: result?.status ?? 'pending',
    source: req ? 'llm' : 'pack',
    model: req?.model ?? null,
    summary: result?.summary ?? null,
    // Every field asked for is there, null until (or unless) a valid value came.
    fields: { ...Object.fromEntries((req?.fields ?? []).map((f) => [f.name, null])), ...result?.fields },
    ...packed,
    usage: result?.usage ?? null,
    cost_cents: centsOf(result?.costMicrocents ?? 0),
    attempts: result?.attempts ?? 0,
    error: result?.error ?? null,
    completed_at: result ? Math.floor(result.at / 1000) : null,
  };
  return object;
}

/**
 * A call's `analysis` in its view: an asked one (pending until stored), or a pack's call's
 * decisions once it ended with a conversation (`source: "pack"`, free, no llm); else null.
 */
export function analysisOf(c: VoiceCallContext<CallSpecFields>, turns: readonly Turn[], ended: boolean): CallAnalysisObject | null {
  const req = c.spec.analysis;
  const heard = turns.some((t) => t.role === 'callee');
  const pack = c.spec.pack === true && ended && heard ? packFields(turns, c.actions ?? []) : null;
  if (req) return toAnalysisObject(c.analysis ?? null, req, pack);
  if (!pack) return null;
  return toAnalysisObject(
    { status: 'completed', model: null, summary: null, fields: {}, usage: null, costMicrocents: 0, attempts: 0, error: null, at: c.endedAt ?? c.now },
    null,
    pack,
  );
}
