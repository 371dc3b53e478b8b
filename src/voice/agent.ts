// A call's agent: what it says first and how it answers each thing the callee said. The intent agent
// runs the call's conversation as an intent session (`session_id` = the call id, src/intent/service.ts
// `converse`), so "haan" after an ASK resolves from context exactly as /v1/understand does; its
// replies are the pack's responses, rendered once per wording with the call's tts model and kept as
// 8 kHz PCM16 with its μ-law (`ResponseAudio`, src/speech/clip.ts: what each carrier's stream
// takes), so a reply costs no synthesis time after the first call that used it.
// The LLM agent (and hybrid's LLM turns) stream: the chat route's text is cut into sentences, each
// synthesized as it completes and played while the next is synthesized (src/voice/lines.ts); the
// turn's signal (barge-in, hang-up) cancels the chat stream and the syntheses still running.
// With the call's tools (src/voice/tools.ts), an LLM's tool calls and a pack's business actions go to
// the integrator: a reply's `followUp` says the holding line while they run, then the answer's reply.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { ModelDoc } from '../models/types.ts';
import { responseWording, type IntentService } from '../intent/service.ts';
import type { UpstreamRouter } from '../providers/router.ts';
import type { RoutedModel } from '../providers/routes.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { Resamplers } from '../speech/resample.ts';
import { convertSpeech } from '../speech/convert.ts';
import { SpeechClip } from '../speech/clip.ts';
import type { ChatMessage } from '../providers/types.ts';
import type { IntentPack } from '../intent/pack.ts';
import { sentences, spokenLines, type SpokenLine } from './lines.ts';
import { contextOf, type RecognitionContext } from '../shared/recognition-context.ts';
import { expectationOf, listeningContext, speechDomain } from './expectations.ts';
import { gatewayWording, HOLD_RESPONSE, responseFor, toolResult, ToolRound, type CallTools, type ToolEntry } from './tools.ts';
import { firstUnderstood } from './understanding.ts';

/** Actions after which the agent ends the call (once its reply has played). */
const ENDING_ACTIONS = new Set(['CLOSE', 'ESCALATE']);
/** Actions that are the conversation itself, not a business outcome. */
const CONVERSATIONAL_ACTIONS = new Set(['ASK', 'INFORM', 'CLOSE', 'ESCALATE']);

export interface AgentReply {
  /**
   * What is said, in order: a pack's reply is one line, rendered before the reply is returned; an
   * LLM's reply is its sentences, each as its synthesis ends (the turn's signal cancels the rest).
   */
  lines: AsyncIterable<SpokenLine>;
  responseId: string | null;
  action: string | null;
  intent: string | null;
  entities: Record<string, string | number>;
  nextState: string | null;
  /**
   * A business action to record in the call's outcome (CREATE_DISPUTE…): the entities it acts on,
   * the session's after this turn (the amount said before the "haan" that confirmed it); null: none.
   */
  outcome: Record<string, string | number> | null;
  /** End the call once this reply has played. */
  hangup: boolean;
  /** The reply asks for digits (an amount, a phone number): the callee's answer may pause between them. */
  expectsDigits: boolean;
  /** What follows once this reply played or was cut (requests sent to the integrator: the holding line, then their answer's reply). */
  followUp?: (signal: AbortSignal) => Promise<AgentReply | null>;
  /**
   * The reply to the integrator's answers, not made: the callee spoke over the holding line (or the
   * reply that sent the requests, or the wait), so their next turn is answered instead, with the
   * answers in context. Said only when that turn is none (a backchannel, nothing recognised).
   */
  stale?: (signal: AbortSignal) => Promise<AgentReply | null>;
  /** Requests made to the integrator and their answers: recorded (a `tool` turn and an outcome action each) before this reply plays. */
  tools?: ToolEntry[];
  /** Keys the agent sends (src/voice/dtmf.ts): the reply is their tones, its turn carries them. */
  dtmf?: string;
}

export interface CallAgent {
  /** The first thing the agent says (null: it waits for the callee). */
  opening(): Promise<AgentReply | null>;
  /** The reply to what the callee said; null when there is nothing to say. `signal` ends the turn (barge-in, hang-up). */
  reply(text: string, signal: AbortSignal): Promise<AgentReply | null>;
  /** What it says when nobody has spoken for a while (null: nothing). */
  prompt(): Promise<AgentReply | null>;
  /** What it says before the credit guard hangs up (null: nothing, the call ends at its limit). */
  lowBalance(): Promise<AgentReply | null>;
  /**
   * What the callee's next utterance is expected to be, from what the agent said last (its words
   * as the prompt; with a pack, the answer's shape and the words to favour: src/voice/expectations.ts),
   * for the call's recogniser. Undefined before the agent has said anything.
   */
  listening(): RecognitionContext | undefined;
  /** The first of a turn's readings (best first) it understands (src/voice/understanding.ts); null: none, or it cannot tell. */
  understood?(readings: readonly string[]): Promise<string | null>;
}

/** One line as a reply's lines. */
export async function* one(line: SpokenLine): AsyncGenerator<SpokenLine> {
  yield line;
}

/** A reply that is only what it says (no action, intent or entities). */
export const replyOf = (lines: AsyncIterable<SpokenLine>, responseId: string | null = null): AgentReply => ({
  lines,
  responseId,
  action: null,
  intent: null,
  entities: {},
  nextState: null,
  outcome: null,
  hangup: false,
  expectsDigits: false,
});

const SYNTHESIS_TIMEOUT_MS = 60_000;

/** Speech for a wording, as 8 kHz PCM16 (and μ-law), rendered once per (tts model, voice, wording). */
export class ResponseAudio {
  private readonly cache = new LRUCache<string, Promise<SpeechClip>>({ max: 2000 });

  constructor(
    private readonly deps: {
      router: Pick<UpstreamRouter, 'speak'>;
      resolveRoutes(model: RoutedModel): ResolvedRoute[];
      resamplers(): Promise<Resamplers>;
    },
  ) {}

  render(tts: ModelDoc, voice: string, language: string | undefined, text: string): Promise<SpeechClip> {
    const key = `${tts._id}:${tts.revision ?? ''}:${voice}:${language ?? ''}:${createHash('sha256').update(text).digest('base64url')}`;
    let audio = this.cache.get(key);
    if (!audio) {
      audio = this.synthesize(tts, voice, language, text);
      this.cache.set(key, audio);
      audio.catch(() => this.cache.delete(key)); // a failure is not kept
    }
    return audio;
  }

  /** Speech for a text said once (an LLM's sentence): not kept. `signal` cancels it. */
  async synthesize(tts: ModelDoc, voice: string, language: string | undefined, text: string, cancel?: AbortSignal): Promise<SpeechClip> {
    const timeout = AbortSignal.timeout(SYNTHESIS_TIMEOUT_MS);
    const signal = cancel ? AbortSignal.any([cancel, timeout]) : timeout;
    const { audio, first, rest } = await this.deps.router.speak(
      this.deps.resolveRoutes(tts),
      { input: text, voice, ...(language ? { language } : {}), format: 'pcm', sampleRate: 8000 },
      signal,
    );
    const chunks = (async function* () {
      if (first) yield first;
      yield* rest;
    })();
    const out: Buffer[] = [];
    for await (const c of convertSpeech(audio, chunks, { format: 'pcm', sampleRate: 8000 }, { resamplers: this.deps.resamplers, signal })) out.push(c);
    const pcm = Buffer.concat(out);
    return new SpeechClip(pcm.length % 2 === 0 ? pcm : pcm.subarray(0, pcm.length - 1));
  }
}

/** `{{name}}` in a wording, from the call's variables (an unknown name is left as it is). */
export function fillVariables(text: string, variables: Record<string, string>): string {
  return text.replace(/\{\{\s*([A-Za-z0-9_]{1,64})\s*\}\}/g, (whole, name: string) => (Object.hasOwn(variables, name) ? variables[name]! : whole));
}

/** An LLM's streamed answer to the conversation so far: its text as it comes (the agent keeps the history); `tools` offered and their calls gathered. */
export type ChatTurn = (messages: ChatMessage[], signal: AbortSignal, tools?: ToolRound) => Promise<AsyncIterable<string>>;

interface LlmSettings {
  chat: ChatTurn;
  systemPrompt: string;
  /** The call's tools (src/voice/tools.ts): offered to the LLM, its calls sent to the integrator. */
  tools?: CallTools | undefined;
  /** A hybrid agent's pack's holding line (`GEN.HOLD` in the call's language), when the call and its model give none. */
  packHold?: () => Promise<string | null>;
}

/** The most rounds of tool calls one LLM turn makes (the last round is offered none, so it speaks). */
const MAX_TOOL_ROUNDS = 3;

async function* none(): AsyncGenerator<SpokenLine> {}

/**
 * What follows a reply that sent requests to the integrator: the holding line while they run
 * (`hold`; null when the reply said something already), then `after`'s reply to their answers,
 * which carries them for the transcript (recorded before it plays, so after the holding line).
 * When the turn's signal was aborted by then (the callee took the turn: src/voice/speaking.ts), the
 * answers are recorded (and an LLM's history gets them) but their reply is left `stale`.
 */
async function afterTools(
  hold: (() => Promise<SpokenLine>) | null,
  answers: () => Promise<ToolEntry[]>,
  after: (entries: ToolEntry[], signal: AbortSignal) => Promise<AgentReply | null>,
  signal: AbortSignal,
): Promise<AgentReply> {
  const answered = async (s: AbortSignal): Promise<AgentReply> => {
    const entries = await answers();
    // An LLM that fails after a tool: the call goes on, listening.
    const reply = async (r: AbortSignal) => ((await after(entries, r).catch(() => null)) ?? replyOf(none())) as AgentReply;
    if (s.aborted) return { ...replyOf(none()), tools: entries, stale: reply };
    return { ...(await reply(s)), tools: entries };
  };
  return hold ? { ...replyOf(one(await hold())), followUp: answered } : answered(signal);
}

/** How a call's agent speaks: the call's tts model and voice, and the wordings' variables. */
interface Voice {
  tts: ModelDoc;
  voice: string;
  language: string;
  variables: Record<string, string>;
  audio: ResponseAudio;
}

export interface IntentAgentOptions extends Voice {
  callId: string;
  intent: Pick<IntentService, 'converse' | 'packOf'>;
  intentModel: ModelDoc;
  /** What it says first: a pack response, or text; `wait_for_callee` says nothing first. */
  firstMessage: { response_id?: string; text?: string; mode: 'agent_first' | 'wait_for_callee' | 'after_silence' };
  /**
   * Hybrid: an LLM answers the turns the pack leaves UNKNOWN or OUT_OF_SCOPE (with the whole
   * conversation as context); every other turn is the pack's.
   */
  llm?: LlmSettings;
  /** The call's tools: its pack's business actions go to the integrator when it named `tool_url`. */
  tools?: CallTools | undefined;
}

/** The most of a conversation an LLM is sent (the system prompt, then the latest turns). */
const MAX_HISTORY = 40;
/** The longest an LLM's reply may take to stream, and the most of it that is said. */
const LLM_TIMEOUT_MS = 15_000;
const MAX_LLM_REPLY_CHARS = 1000;
/** Whether the pack's response `responseId` asks for digits (an amount, a phone number): the callee's answer may pause between them. */
function asksForDigits(pack: IntentPack, responseId: string): boolean {
  const expected = expectationOf(pack, responseId);
  return expected === 'amount' || expected === 'digits';
}

/** What the callee is told last in `history` (an LLM's reply), as the prompt of their answer. */
const afterLastReply = (history: ChatMessage[]): RecognitionContext | undefined =>
  contextOf({ prompt: history.findLast((m) => m.role === 'assistant')?.content?.slice(0, 1000) });

/**
 * A callee turn's reply wording, its audio rendered (once, kept) as the reply plays: the reply is
 * returned at the pack's decision, so a turn's `agent` and `synthesis` stages are timed apart
 * (src/voice/turn-stages.ts).
 */
async function* rendered(v: Voice, text: string): AsyncGenerator<SpokenLine> {
  yield { text, audio: await v.audio.render(v.tts, v.voice, v.language, text) };
}

/** A fixed wording said in the call's voice (rendered once, kept). */
async function wordingLine(v: Voice, wording: string): Promise<SpokenLine> {
  const text = fillVariables(wording, v.variables);
  return { text, audio: await v.audio.render(v.tts, v.voice, v.language, text) };
}

export function intentAgent(o: IntentAgentOptions): CallAgent {
  let turns = 0;
  const history: ChatMessage[] = [];
  let listening: () => RecognitionContext | undefined = () => undefined;
  // The pack's speech domain (its models are prepared as the call is placed: src/voice/live.ts).
  const inDomain = (pack: IntentPack, context: RecognitionContext | undefined): RecognitionContext => ({ ...context, domain: speechDomain(pack).key });
  const wording = async (responseId: string): Promise<AgentReply | null> => {
    const pack = await o.intent.packOf(o.intentModel);
    const text = pack ? responseWording(pack, responseId, o.language) : null;
    if (pack === null || text === null) return null;
    const line = await wordingLine(o, text);
    listening = () => inDomain(pack.pack, listeningContext(pack.pack, responseId, line.text));
    return { ...replyOf(one(line), responseId), expectsDigits: asksForDigits(pack.pack, responseId) };
  };
  return {
    listening: () => listening(),
    async understood(readings) {
      const pack = await o.intent.packOf(o.intentModel);
      return pack ? firstUnderstood(pack, listening()?.expect, readings) : null;
    },
    async prompt() {
      // The pack's own idle wording when it has one, else its clarifying question.
      return (await wording('GEN.IDLE')) ?? wording('GEN.CLARIFY');
    },
    lowBalance() {
      return wording('GEN.LOW_BALANCE');
    },
    async opening() {
      const first = o.firstMessage;
      if (first.mode === 'wait_for_callee') {
        const pack = await o.intent.packOf(o.intentModel);
        if (pack) listening = () => inDomain(pack.pack, undefined);
        return null;
      }
      if (first.text === undefined) return wording(first.response_id ?? 'GEN.GREETING');
      const line = await wordingLine(o, first.text);
      const pack = await o.intent.packOf(o.intentModel);
      listening = () => (pack ? inDomain(pack.pack, listeningContext(pack.pack, null, line.text)) : listeningContext(null, null, line.text));
      return replyOf(one(line));
    },
    async reply(heard, signal) {
      turns += 1;
      history.push({ role: 'user', content: heard });
      const out = await o.intent.converse(o.callId, o.intentModel, heard, o.language, `${o.callId}:${turns}`);
      if (o.llm && (out.classification === 'UNKNOWN' || out.classification === 'OUT_OF_SCOPE')) {
        listening = () => afterLastReply(history);
        const packHold = async () => {
          const pack = await o.intent.packOf(o.intentModel);
          return pack && responseWording(pack, HOLD_RESPONSE, o.language);
        };
        return { ...(await llmReply(o, { ...o.llm, packHold }, history, signal)), entities: out.entities };
      }
      if (out.say === null) return null;
      const action = out.decision.action;
      const pack = await o.intent.packOf(o.intentModel);
      const tools = o.tools;
      if (tools?.sendsActions && !CONVERSATIONAL_ACTIONS.has(action)) {
        // The integrator does the action: the holding line while it does, then the response its answer chooses.
        const sent = tools.send({ id: tools.actionId(), type: 'action', name: action, arguments: out.collected, intent: out.intent?.id ?? null });
        const hold = () =>
          wordingLine(o, tools.plan.holdText ?? (pack && responseWording(pack, HOLD_RESPONSE, o.language)) ?? gatewayWording('hold', o.language));
        const chosen = async ([entry]: ToolEntry[]): Promise<AgentReply> => {
          const id = responseFor(entry!, out.decision.response_id, (r) => pack !== null && Object.hasOwn(pack.pack.responses, r));
          const said = (await wording(id)) ?? { ...replyOf(one(await wordingLine(o, gatewayWording('failed', o.language)))), responseId: null };
          return { ...said, intent: out.intent?.id ?? null, nextState: out.decision.next_state };
        };
        return { ...replyOf(none()), intent: out.intent?.id ?? null, followUp: (s) => afterTools(hold, async () => [await sent], chosen, s) };
      }
      const text = fillVariables(out.say, o.variables);
      history.push({ role: 'assistant', content: text });
      listening = () =>
        pack ? inDomain(pack.pack, listeningContext(pack.pack, out.decision.response_id, text)) : listeningContext(null, out.decision.response_id, text);
      return {
        ...replyOf(rendered(o, text), out.decision.response_id),
        action,
        intent: out.intent?.id ?? null,
        entities: out.entities,
        nextState: out.decision.next_state,
        outcome: CONVERSATIONAL_ACTIONS.has(action) ? null : out.collected,
        hangup: ENDING_ACTIONS.has(action),
        expectsDigits: pack !== null && asksForDigits(pack.pack, out.decision.response_id),
      };
    },
  };
}

/**
 * The LLM's reply to the conversation so far, streamed: its sentences, each synthesized (not kept)
 * as soon as it completes. The history gets the reply's text once the stream ends (or is cut), with
 * the tool calls it made: they are sent then, and the reply's `followUp` gives the LLM their answers
 * (`tool` messages) for its next reply, up to MAX_TOOL_ROUNDS rounds.
 */
async function llmReply(v: Voice, llm: LlmSettings, history: ChatMessage[], signal: AbortSignal, round = 0): Promise<AgentReply> {
  // The system prompt's `{{variables}}` are the call's, filled as in the wordings and the first message.
  const messages: ChatMessage[] = [{ role: 'system', content: fillVariables(llm.systemPrompt, v.variables) }, ...history.slice(-MAX_HISTORY)];
  const limited = AbortSignal.any([signal, AbortSignal.timeout(LLM_TIMEOUT_MS)]);
  const tools = llm.tools && llm.tools.definitions.length > 0 && round < MAX_TOOL_ROUNDS ? new ToolRound(llm.tools) : undefined;
  const deltas = await llm.chat(messages, limited, tools);
  const said: string[] = [];
  const texts = (async function* () {
    try {
      for await (const sentence of sentences(capped(deltas, MAX_LLM_REPLY_CHARS))) {
        said.push(sentence);
        yield sentence;
      }
    } finally {
      const calls = tools?.finish(limited.aborted) ?? [];
      if (said.length > 0 || calls.length > 0)
        history.push({ role: 'assistant', content: said.length > 0 ? said.join(' ') : null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    }
  })();
  const reply: AgentReply = { ...replyOf(spokenLines(texts, (text, s) => v.audio.synthesize(v.tts, v.voice, v.language, text, s), limited)), action: 'LLM' };
  if (!tools) return reply;
  const hold = async () => wordingLine(v, llm.tools!.plan.holdText ?? (await llm.packHold?.()) ?? gatewayWording('hold', v.language));
  // The conversation gets the answers as they come, whether or not their reply is made.
  const answers = async () => {
    const entries = await tools.answers();
    for (const e of entries) history.push({ role: 'tool', tool_call_id: e.exchange.id, content: toolResult(e) });
    return entries;
  };
  const after = (_entries: ToolEntry[], s: AbortSignal) => llmReply(v, llm, history, s, round + 1);
  // Once the reply played: nothing more when it called no tool; the holding line unless it said something first.
  return { ...reply, followUp: async (s) => (tools.asked ? afterTools(said.length > 0 ? null : hold, answers, after, s) : null) };
}

/** The stream's text up to `max` characters (the stream is left there). */
async function* capped(deltas: AsyncIterable<string>, max: number): AsyncGenerator<string> {
  let left = max;
  for await (const delta of deltas) {
    yield delta.slice(0, left);
    left -= delta.length;
    if (left <= 0) return;
  }
}

export interface LlmAgentOptions extends Voice {
  firstMessage: { text?: string; mode: 'agent_first' | 'wait_for_callee' | 'after_silence' };
  llm: LlmSettings;
}

/**
 * The LLM agent: every turn is the LLM's, with the conversation as context; it opens with
 * `first_message.text` (or waits for the callee) and never hangs up itself.
 */
export function llmAgent(o: LlmAgentOptions): CallAgent {
  const history: ChatMessage[] = [];
  return {
    listening: () => afterLastReply(history),
    async opening() {
      if (o.firstMessage.mode === 'wait_for_callee' || o.firstMessage.text === undefined) return null;
      const line = await wordingLine(o, o.firstMessage.text);
      history.push({ role: 'assistant', content: line.text });
      return { ...replyOf(one(line)), action: 'LLM' };
    },
    async reply(heard, signal) {
      history.push({ role: 'user', content: heard });
      return llmReply(o, o.llm, history, signal);
    },
    async prompt() {
      return null;
    },
    // No pack, so no wording we could vouch for in every language: the call ends at its limit.
    async lowBalance() {
      return null;
    },
  };
}
