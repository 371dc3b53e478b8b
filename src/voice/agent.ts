// A call's agent: what it says first and how it answers each thing the callee said. The intent agent
// runs the call's conversation as an intent session (`session_id` = the call id, src/intent/service.ts
// `converse`), so "haan" after an ASK resolves from context exactly as /v1/understand does; its
// replies are the pack's responses, rendered once per wording with the call's tts model and kept as
// 8 kHz μ-law (`ResponseAudio`), so a reply costs no synthesis time after the first call that used it.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { ModelDoc } from '../models/types.ts';
import { responseWording, type IntentService } from '../intent/service.ts';
import type { UpstreamRouter, RoutedModel } from '../providers/router.ts';
import type { ResolvedRoute } from '../providers/types.ts';
import type { Resamplers } from '../speech/resample.ts';
import { convertSpeech } from '../synthesis/convert.ts';
import type { ChatMessage } from '../providers/types.ts';

/** Actions after which the agent ends the call (once its reply has played). */
const ENDING_ACTIONS = new Set(['CLOSE', 'ESCALATE']);
/** Actions that are the conversation itself, not a business outcome. */
const CONVERSATIONAL_ACTIONS = new Set(['ASK', 'INFORM', 'CLOSE', 'ESCALATE']);

export interface AgentReply {
  text: string;
  audio: Buffer;
  responseId: string | null;
  action: string | null;
  intent: string | null;
  entities: Record<string, string | number>;
  nextState: string | null;
  /** A business action to record in the call's outcome (CREATE_DISPUTE…). */
  outcome: boolean;
  /** End the call once this reply has played. */
  hangup: boolean;
}

export interface CallAgent {
  /** The first thing the agent says (null: it waits for the callee). */
  opening(): Promise<AgentReply | null>;
  /** The reply to what the callee said; null when there is nothing to say. */
  reply(text: string): Promise<AgentReply | null>;
  /** What it says when nobody has spoken for a while (null: nothing). */
  prompt(): Promise<AgentReply | null>;
  /** What it says before the credit guard hangs up (null: nothing, the call ends at its limit). */
  lowBalance(): Promise<AgentReply | null>;
}

/** Speech for a wording, as 8 kHz μ-law, rendered once per (tts model, voice, wording). */
export class ResponseAudio {
  private readonly cache = new LRUCache<string, Promise<Buffer>>({ max: 2000 });

  constructor(
    private readonly deps: {
      router: Pick<UpstreamRouter, 'speak'>;
      resolveRoutes(model: RoutedModel): ResolvedRoute[];
      resamplers(): Promise<Resamplers>;
    },
  ) {}

  render(tts: ModelDoc, voice: string, language: string | undefined, text: string): Promise<Buffer> {
    const key = `${tts._id}:${tts.revision ?? ''}:${voice}:${language ?? ''}:${createHash('sha256').update(text).digest('base64url')}`;
    let audio = this.cache.get(key);
    if (!audio) {
      audio = this.synthesize(tts, voice, language, text);
      this.cache.set(key, audio);
      audio.catch(() => this.cache.delete(key)); // a failure is not kept
    }
    return audio;
  }

  private async synthesize(tts: ModelDoc, voice: string, language: string | undefined, text: string): Promise<Buffer> {
    const signal = AbortSignal.timeout(60_000);
    const { audio, first, rest } = await this.deps.router.speak(
      this.deps.resolveRoutes(tts),
      { input: text, voice, ...(language ? { language } : {}), format: 'mulaw', sampleRate: 8000 },
      signal,
    );
    const chunks = (async function* () {
      if (first) yield first;
      yield* rest;
    })();
    const out: Buffer[] = [];
    for await (const c of convertSpeech(audio, chunks, { format: 'mulaw', sampleRate: 8000 }, { resamplers: this.deps.resamplers, signal })) out.push(c);
    return Buffer.concat(out);
  }
}

/** `{{name}}` in a wording, from the call's variables (an unknown name is left as it is). */
export function fillVariables(text: string, variables: Record<string, string>): string {
  return text.replace(/\{\{\s*([A-Za-z0-9_]{1,64})\s*\}\}/g, (whole, name: string) => (Object.hasOwn(variables, name) ? variables[name]! : whole));
}

/** An LLM's answer to the conversation so far (the agent keeps the history). */
export type ChatTurn = (messages: ChatMessage[], signal: AbortSignal) => Promise<string>;

export interface IntentAgentOptions {
  callId: string;
  intent: Pick<IntentService, 'converse' | 'packOf'>;
  intentModel: ModelDoc;
  tts: ModelDoc;
  voice: string;
  language: string;
  variables: Record<string, string>;
  /** What it says first: a pack response, or text; `wait_for_callee` says nothing first. */
  firstMessage: { response_id?: string; text?: string; mode: 'agent_first' | 'wait_for_callee' | 'after_silence' };
  audio: ResponseAudio;
  /**
   * Hybrid: an LLM answers the turns the pack leaves UNKNOWN or OUT_OF_SCOPE (with the whole
   * conversation as context); every other turn is the pack's.
   */
  llm?: { chat: ChatTurn; systemPrompt: string };
}

/** The most of a conversation an LLM is sent (the system prompt, then the latest turns). */
const MAX_HISTORY = 40;
const LLM_TIMEOUT_MS = 15_000;

export function intentAgent(o: IntentAgentOptions): CallAgent {
  let turns = 0;
  const history: ChatMessage[] = [];
  const speak = (text: string) => o.audio.render(o.tts, o.voice, o.language, fillVariables(text, o.variables));
  const wording = async (responseId: string): Promise<AgentReply | null> => {
    const pack = await o.intent.packOf(o.intentModel);
    const text = pack ? responseWording(pack, responseId, o.language) : null;
    if (text === null) return null;
    return { text: fillVariables(text, o.variables), audio: await speak(text), responseId, action: null, intent: null, entities: {}, nextState: null, outcome: false, hangup: false };
  };
  return {
    async prompt() {
      // The pack's own idle wording when it has one, else its clarifying question.
      return (await wording('GEN.IDLE')) ?? wording('GEN.CLARIFY');
    },
    lowBalance() {
      return wording('GEN.LOW_BALANCE');
    },
    async opening() {
      const first = o.firstMessage;
      if (first.mode === 'wait_for_callee') return null;
      if (first.text === undefined) return wording(first.response_id ?? 'GEN.GREETING');
      return { text: fillVariables(first.text, o.variables), audio: await speak(first.text), responseId: null, action: null, intent: null, entities: {}, nextState: null, outcome: false, hangup: false };
    },
    async reply(heard) {
      turns += 1;
      history.push({ role: 'user', content: heard });
      const out = await o.intent.converse(o.callId, o.intentModel, heard, o.language, `${o.callId}:${turns}`);
      if (o.llm && (out.classification === 'UNKNOWN' || out.classification === 'OUT_OF_SCOPE')) {
        const said = await llmReply(o.llm, history);
        if (said === null) return null;
        return { text: said, audio: await speak(said), responseId: null, action: 'LLM', intent: null, entities: out.entities, nextState: null, outcome: false, hangup: false };
      }
      if (out.say !== null) history.push({ role: 'assistant', content: fillVariables(out.say, o.variables) });
      if (out.say === null) return null;
      const action = out.decision.action;
      return {
        text: fillVariables(out.say, o.variables),
        audio: await speak(out.say),
        responseId: out.decision.response_id,
        action,
        intent: out.intent?.id ?? null,
        entities: out.entities,
        nextState: out.decision.next_state,
        outcome: !CONVERSATIONAL_ACTIONS.has(action),
        hangup: ENDING_ACTIONS.has(action),
      };
    },
  };
}

/** The LLM's next line (the history gets it); null when it said nothing usable. */
async function llmReply(llm: { chat: ChatTurn; systemPrompt: string }, history: ChatMessage[]): Promise<string | null> {
  const messages: ChatMessage[] = [{ role: 'system', content: llm.systemPrompt }, ...history.slice(-MAX_HISTORY)];
  const said = (await llm.chat(messages, AbortSignal.timeout(LLM_TIMEOUT_MS))).trim().slice(0, 1000);
  if (!said) return null;
  history.push({ role: 'assistant', content: said });
  return said;
}

export interface LlmAgentOptions {
  tts: ModelDoc;
  voice: string;
  language: string;
  variables: Record<string, string>;
  firstMessage: { text?: string; mode: 'agent_first' | 'wait_for_callee' | 'after_silence' };
  audio: ResponseAudio;
  llm: { chat: ChatTurn; systemPrompt: string };
}

/**
 * The LLM agent: every turn is the LLM's, with the conversation as context; it opens with
 * `first_message.text` (or waits for the callee) and never hangs up itself.
 */
export function llmAgent(o: LlmAgentOptions): CallAgent {
  const history: ChatMessage[] = [];
  const line = async (text: string): Promise<AgentReply> => ({ text, audio: await o.audio.render(o.tts, o.voice, o.language, text), responseId: null, action: 'LLM', intent: null, entities: {}, nextState: null, outcome: false, hangup: false });
  return {
    async opening() {
      if (o.firstMessage.mode === 'wait_for_callee' || o.firstMessage.text === undefined) return null;
      const text = fillVariables(o.firstMessage.text, o.variables);
      history.push({ role: 'assistant', content: text });
      return line(text);
    },
    async reply(heard) {
      history.push({ role: 'user', content: heard });
      const said = await llmReply(o.llm, history);
      return said === null ? null : line(said);
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
