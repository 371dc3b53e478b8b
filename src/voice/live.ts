// A call's live side, assembled: the `CallMedia` that `VoiceCalls.place` (src/voice/service.ts)
// hands the call's actor as its resources, with the request's turn and idle settings, and the
// factory of what the call says and hears with: its agent (the pack's, an LLM's, or both) and the
// recogniser (the call's stt model through the router, one utterance at a time, each with the
// context the agent's last words give it: src/voice/expectations.ts). The factory runs
// once, when the call is answered (src/voice/media.ts): a call that is never answered builds neither.
// The call's tools (src/voice/tools.ts) are the agent's, and each action it records is a `call.action`
// event (src/voice/call-actions.ts).
import type { Logger } from 'pino';
import type { LanguageModels } from '../speech/language-models.ts';
import { speechDomain } from './expectations.ts';
import type { ActorRuntime } from '../actors/runtime.ts';
import type { IntentService } from '../intent/service.ts';
import type { ModelDoc } from '../models/types.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ChatChunk, ResolvedRoute } from '../providers/types.ts';
import { utteranceRequest } from '../providers/utterance.ts';
import { matchLanguage } from '../speech/languages.ts';
import type { VoiceDetectors } from '../speech/vad.ts';
import type { Resamplers } from '../speech/resample.ts';
import { intentAgent, llmAgent, type CallAgent, type ChatTurn, type ResponseAudio } from './agent.ts';
import type { Carrier } from '../providers/carrier.ts';
import type { VoiceKind } from './kind.ts';
import type { Conversation } from './call-line.ts';
import { CallMedia } from './media.ts';
import { handoffWords } from './transfer.ts';
import type { Pacer } from './pacer.ts';
import { recordingTurns, type CallTranscripts } from './transcript.ts';
import type { VoiceMetrics } from './turn-stages.ts';
import type { EventSink } from '../shared/events.ts';
import { announcingActions } from './call-actions.ts';
import type { ToolPlan, ToolRequester } from './tool-requests.ts';
import { CallTools } from './tools.ts';
import type { ToolJournalWriter } from './tool-journal.ts';
import type { CallRecorder } from './recorder.ts';
import { recordingNotice } from './recording-notice.ts';
import type { Voicemail } from '../shared/voicemail-schema.ts';
import { voicemailMessage } from './voicemail.ts';

/**
 * Longer than a backchannel ("haan", "ok", "ji"): recognition comes per utterance, after it ends, so a backchannel is known as one only then;
 * by its voiced length (src/voice/listening.ts counts the voice heard, not the time since its onset) it does not cut the agent off.
 */
const DEFAULT_MIN_SPEECH_MS = 400;
const DEFAULT_IDLE_PROMPT_MS = 8000;
const DEFAULT_IDLE_PROMPTS = 2;
const DEFAULT_IGNORE = ['haan', 'ji', 'hmm', 'ok', 'achha'];

/** What the live side needs of the voice service's dependencies (its `VoiceServiceDeps`). */
export interface LiveDeps {
  runtime: Pick<ActorRuntime, 'ref'>;
  kind: VoiceKind;
  intent: Pick<IntentService, 'converse' | 'packOf'>;
  audio: ResponseAudio;
  router: Pick<UpstreamRouter, 'transcribe' | 'stream'>;
  resolveRoutes(model: RoutedModel): ResolvedRoute[];
  detectors(): Promise<VoiceDetectors>;
  /** The instance's resamplers (a stream at another rate than 8 kHz: src/voice/media.ts). */
  resamplers(): Promise<Resamplers>;
  /** The gateway's public base URL (http[s]://…), for the carriers' media streams. */
  baseUrl(): string;
  settings: { mediaTimeoutMs: number };
  /** The calls' transcripts: each turn is appended there before the call's actor hears of it. */
  transcripts: Pick<CallTranscripts, 'append'>;
  logger: Logger;
  now(): number;
  /** Each turn's stages and latency (src/voice/turn-stages.ts); none in tests that do not read them. */
  metrics?: VoiceMetrics;
  /** The offline recogniser's conversation models (src/speech/language-models.ts): a pack's are prepared when its call starts. */
  languageModels?: Pick<LanguageModels, 'prepare'>;
  /** The calls' requests to integrators (src/voice/tool-requests.ts). */
  toolRequests: ToolRequester;
  /** Where the requests in flight are kept, so a restart records them `interrupted` (src/voice/tool-journal.ts). */
  toolJournal?: ToolJournalWriter;
  /** The account events (a `call.action` per action the agent records). */
  events: EventSink;
}

/** What the live side reads of the request (the fields of `VoiceCallBody`, src/voice/service.ts). */
export interface LiveRequest {
  agent?: { type: 'intent' } | { type: 'llm' | 'hybrid'; system_prompt: string };
  variables?: Record<string, string>;
  first_message?: { response_id?: string; text?: string; mode?: 'agent_first' | 'wait_for_callee' | 'after_silence' };
  transfer_to?: string;
  idle?: { prompt_after_ms?: number; max_prompts?: number };
  turn?: { interruption?: { enabled?: boolean; min_speech_ms?: number; ignore?: string[] } };
  recording_notice?: string;
}

/** What the service's checks settled about the call (its `Checked`). */
export interface LivePlan {
  language: string;
  voice: string;
  reservedSeconds: number;
  maxSeconds: number;
  stt: ModelDoc;
  tts: ModelDoc;
  /** The intent agent's model (intent and hybrid agents), and the LLM's (llm and hybrid). */
  intentModel: ModelDoc | null;
  llmModel: ModelDoc | null;
  /** The model's routes this build can dial through, in order (their index among the model's routes). */
  carriers: { route: number; carrier: Carrier }[];
  /** The call's tools and where its pack's actions go (src/voice/tool-requests.ts); null: none. */
  tools: ToolPlan | null;
  /** What the call does when a machine answers (the body's `voicemail`, else the model's); null: nothing detected. */
  voicemail: Voicemail | null;
}

export interface LiveCall {
  callId: string;
  /** The paying account (its transcript's owner), and the user or organization it is (its events' owner). */
  account: string;
  owner: { type: 'user' | 'org'; id: number };
  model: string;
  /** The call's `webhook_id`: its events go there only. */
  webhookId?: number | undefined;
  metadata: Record<string, string>;
  body: LiveRequest;
  plan: LivePlan;
  /** The endpointing silences (src/voice/service.ts's `endpointing`). */
  endpointingMs: { min: number; max: number };
  /** The one-time token the stream's `start` frame must carry. */
  token: string;
  /** The instance's playback clock (one timer for every call). */
  pacer: Pacer;
  onDisposed(): void;
  /** A transfer of the call is asked of a carrier that asks back after it: keep it (src/voice/handoffs.ts). */
  onHandoff?(carrierCallId: string, to: string, from: string | null): Promise<void>;
  /** The call's recording (src/voice/recordings.ts); null: not recorded. */
  recorder?: CallRecorder | null;
}

/** The call's live side (not yet dialling: its actor's `dial` effect does). */
export function callMedia(deps: LiveDeps, call: LiveCall): CallMedia {
  const { callId, body, plan: c } = call;
  const log = deps.logger.child({ call_id: callId });
  const base = deps.baseUrl().replace(/\/+$/, '').replace(/^http/, 'ws');
  const interruption = body.turn?.interruption ?? {};
  prepareSpeech(deps, c, log);
  return new CallMedia({
    callId,
    carriers: c.carriers,
    actor: announcingActions(recordingTurns(deps.runtime.ref(deps.kind, callId), { callId, account: call.account, turns: deps.transcripts }, log), {
      events: deps.events,
      owner: call.owner,
      webhookId: call.webhookId,
      fields: { call_id: callId, model: call.model },
      log,
    }),
    streamUrl: `${base}/v1/voice/calls/${callId}/stream`,
    token: call.token,
    converse: (clock) => conversation(deps, call, log, clock),
    detectors: deps.detectors,
    resamplers: deps.resamplers,
    turn: {
      endpointingMs: call.endpointingMs,
      interruption: {
        enabled: interruption.enabled ?? true,
        minSpeechMs: interruption.min_speech_ms ?? DEFAULT_MIN_SPEECH_MS,
        ignore: (interruption.ignore ?? DEFAULT_IGNORE).map((w) => w.toLowerCase()),
      },
    },
    mediaTimeoutMs: deps.settings.mediaTimeoutMs,
    creditLimitMs: c.reservedSeconds < c.maxSeconds ? c.reservedSeconds * 1000 : null,
    idle: { promptAfterMs: body.idle?.prompt_after_ms ?? DEFAULT_IDLE_PROMPT_MS, maxPrompts: body.idle?.max_prompts ?? DEFAULT_IDLE_PROMPTS },
    log,
    now: deps.now,
    onDisposed: call.onDisposed,
    pacer: call.pacer,
    ...(call.onHandoff ? { onHandoff: call.onHandoff } : {}),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    handoffWords: () => handoffWords({ intent: deps.intent, intentModel: c.intentModel, audio: deps.audio, tts: c.tts, voice: c.voice, language: c.language }),
    ...(body.transfer_to ? { transferTo: body.transfer_to } : {}),
    recorder: call.recorder ?? null,
    notice:
      call.recorder && body.recording_notice ? recordingNotice(deps.audio, { tts: c.tts, voice: c.voice, language: c.language }, body.recording_notice) : null,
    voicemail: {
      plan: c.voicemail,
      message: () => voicemailMessage(c.voicemail!, { ...c, audio: deps.audio, variables: body.variables ?? {}, intent: deps.intent }),
    },
  });
}

/**
 * When the call's turns go to the offline recogniser, its pack's language models start building as
 * the call is placed (src/speech/language-models.ts: about 2 s once per pack version), so the ringing
 * and the greeting cover it; the first turn waits for what is left. Other recognisers need none.
 */
function prepareSpeech(deps: LiveDeps, c: LivePlan, log: Logger): void {
  const models = deps.languageModels;
  if (!models || c.intentModel === null || !c.stt.routes.some((r) => r.provider === 'local')) return;
  deps.intent.packOf(c.intentModel).then(
    (pack) => pack && void models.prepare(speechDomain(pack.pack)),
    (err: unknown) => log.warn({ err }, "could not read the call's pack for its speech models"),
  );
}

/** The call's agent and recogniser (built when the call is answered). */
function conversation(deps: LiveDeps, call: LiveCall, log: Logger, clock: (at: number) => number): Conversation {
  const { callId, body, plan: c } = call;
  const sttLanguage = matchLanguage(c.language, c.stt.languages ?? []);
  const sttRoutes = deps.resolveRoutes(c.stt);
  const tools = c.tools
    ? new CallTools(c.tools, {
        ...{ requests: deps.toolRequests, callId, model: call.model, metadata: call.metadata, now: deps.now, log, clock },
        ...(deps.toolJournal ? { journal: deps.toolJournal } : {}),
      })
    : undefined;
  return {
    agent: agentFor(deps, callId, body, c, tools),
    recognise: async (samples, signal, context) => {
      const req = utteranceRequest(samples, 8000, samples.length / 8000, sttLanguage ?? undefined, context);
      const { result } = await deps.router.transcribe(sttRoutes, req, signal);
      return { text: result.text, ...(result.alternatives ? { alternatives: result.alternatives } : {}) };
    },
  };
}

/** The call's agent: the pack's (intent), an LLM's (llm), or the pack's with an LLM for what it cannot classify (hybrid). */
function agentFor(deps: LiveDeps, callId: string, body: LiveRequest, c: LivePlan, tools: CallTools | undefined): CallAgent {
  const common = { tts: c.tts, voice: c.voice, language: c.language, variables: body.variables ?? {}, audio: deps.audio };
  const firstMessage = { ...body.first_message, mode: body.first_message?.mode ?? ('agent_first' as const) };
  const llm =
    c.llmModel && body.agent && body.agent.type !== 'intent' ? { chat: chatWith(deps, c.llmModel), systemPrompt: body.agent.system_prompt, tools } : undefined;
  if (c.intentModel === null) return llmAgent({ ...common, firstMessage, llm: llm! });
  return intentAgent({ ...common, callId, intent: deps.intent, intentModel: c.intentModel, firstMessage, tools, ...(llm ? { llm } : {}) });
}

/**
 * One LLM turn through the router's streaming chat path (as /v1/chat/completions with `stream:
 * true`: the model's routes, failover until a route's first chunk, limits): its text as it
 * streams. The call's price covers it. `signal` ends the stream and frees the route.
 */
function chatWith(deps: LiveDeps, model: ModelDoc): ChatTurn {
  const routes = deps.resolveRoutes(model);
  return async (messages, signal, tools) => {
    const offered = tools && tools.definitions.length > 0 ? { tools: tools.definitions } : {};
    const { first, rest } = await deps.router.stream(routes, { messages, max_tokens: 200, ...offered }, signal);
    // The text as it streams; the tool calls' pieces gathered beside it (OpenAI's deltas).
    const text = (chunk: ChatChunk): string => {
      const delta = chunk.choices[0]?.delta;
      if (delta?.tool_calls) tools?.collect(delta.tool_calls);
      return delta?.content ?? '';
    };
    return (async function* () {
      if (first) yield text(first);
      for await (const chunk of rest) yield text(chunk);
    })();
  };
}
