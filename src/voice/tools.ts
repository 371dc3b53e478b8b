// The agent acts during the call (issue 41 §5): a call's requests to the integrator, as its agent
// makes them. `CallTools` sends one (src/voice/tool-requests.ts: signed, bounded by the call's
// timeout) and keeps what the transcript records of it (a `tool` turn: the request and its answer);
// `ToolRound` gathers an LLM's streamed tool calls (OpenAI's deltas: id and name first, then the
// arguments in pieces) and sends them when its stream ends; the wordings are what the agent says
// while it waits (the holding line) and when a request failed (the apology), each the call's own,
// else its pack's (`GEN.HOLD`, `GEN.ACTION_FAILED`), else the gateway's in the call's language.
// The agents (src/voice/agent.ts) turn the answers into the next turn: an LLM gets them as `tool`
// messages and speaks its next reply; a pack says the action's response on success, the apology
// otherwise. The requests are free: the call's per-minute price is all a call costs.
import type { Logger } from 'pino';
import type { ToolCall, ToolCallDelta, ToolDefinition } from '../providers/types.ts';
import { primaryLanguage } from '../speech/languages.ts';
import type { ToolExchange, Turn } from '../../machines/voice-call.machine.ts';
import type { ToolAnswer, ToolPlan, ToolRequests } from './tool-requests.ts';
import type { ToolJournalWriter } from './tool-journal.ts';

/** The most of an answer the transcript keeps (the LLM is given all of it, up to 16 KiB). */
const MAX_RESULT_CHARS = 4000;

/** The gateway's holding line and apology, by the call's primary language (English otherwise). */
const HOLD: Record<string, string> = { en: 'One moment please.', hi: 'Ek pal rukiye.' };
const FAILED: Record<string, string> = {
  en: 'Sorry, I could not get that done just now. Is there anything else I can help with?',
  hi: 'Maaf kijiye, abhi yeh nahi ho paaya. Aur kuch madad chahiye?',
};
export const HOLD_RESPONSE = 'GEN.HOLD';
export const FAILED_RESPONSE = 'GEN.ACTION_FAILED';

/** The gateway's own wording of `which` in `language`. */
export function gatewayWording(which: 'hold' | 'failed', language: string): string {
  const table = which === 'hold' ? HOLD : FAILED;
  return table[primaryLanguage(language) ?? 'en'] ?? table.en!;
}

/** One request and its answer, with when each happened (epoch ms) and what the call's outcome records of it. */
export interface ToolEntry {
  sentAt: number;
  answeredAt: number;
  exchange: ToolExchange;
  intent: string | null;
  /** The arguments as an outcome's entities (a nested value as its JSON). */
  entities: Record<string, string | number>;
}

/** A request the agent makes: an LLM's tool call, or a pack's business action with its entities. */
export interface ToolAsk {
  id: string;
  type: 'function' | 'action';
  name: string;
  /** JSON text as the LLM wrote it, or the action's entities. */
  arguments: string | Record<string, string | number>;
  intent?: string | null;
}

export interface CallToolsDeps {
  requests: Pick<ToolRequests, 'post'>;
  callId: string;
  model: string;
  metadata: Record<string, string>;
  now(): number;
  log: Logger;
  /** Keeps each request while it is in flight (a restart records it `interrupted`: src/voice/tool-journal.ts). */
  journal?: ToolJournalWriter;
  /** Seconds from the call's answer (the transcript's clock). */
  clock?(at: number): number;
}

/** A call's tools: its plan (src/voice/tool-requests.ts's `checkTools`) and the requests it sends. */
export class CallTools {
  private actions = 0;

  constructor(
    readonly plan: ToolPlan,
    private readonly deps: CallToolsDeps,
  ) {}

  /** The tools an LLM is offered (none: the call's endpoint takes its pack's actions only). */
  get definitions(): ToolDefinition[] {
    return this.plan.definitions;
  }

  /** A pack's business actions are sent (the call named `tool_url`, or its model `agent_tools.url`). */
  get sendsActions(): boolean {
    return this.plan.actions !== null;
  }

  /** A pack action's request id, unique in the call. */
  actionId(): string {
    return `act_${this.deps.callId.slice(5)}_${++this.actions}`;
  }

  /** Sends `ask` now; resolves with its answer (a tool the call does not have is refused without a request). */
  async send(ask: ToolAsk): Promise<ToolEntry> {
    const sentAt = this.deps.now();
    const args = typeof ask.arguments === 'string' ? parsed(ask.arguments) : ask.arguments;
    const target = ask.type === 'action' ? this.plan.actions : Object.hasOwn(this.plan.targets, ask.name) ? this.plan.targets[ask.name]! : null;
    const { journal, clock, log, callId } = this.deps;
    const kept = (write: Promise<void> | undefined) => write?.catch((err: unknown) => log.warn({ err }, 'the tool journal was not written'));
    // Kept before it goes out: a kill -9 after the request left must find it.
    if (target) await kept(journal?.sent(callId, { id: ask.id, type: ask.type, name: ask.name, arguments: args }, clock?.(sentAt) ?? 0));
    const answer: ToolAnswer = target
      ? await this.deps.requests.post(
          target.url,
          target.secret,
          {
            call_id: this.deps.callId,
            model: this.deps.model,
            tool_call_id: ask.id,
            type: ask.type,
            name: ask.name,
            arguments: args,
            ...(ask.type === 'action' ? { intent: ask.intent ?? null } : {}),
            metadata: this.deps.metadata,
          },
          this.plan.timeoutMs,
          sentAt,
        )
      : { status: 'refused', status_code: null, error: 'unknown_tool', body: '', latency_ms: 0 };
    if (target) void kept(journal?.answered(callId, ask.id));
    if (answer.status !== 'ok') this.deps.log.info({ tool: ask.name, status: answer.status, error: answer.error }, 'a tool request did not succeed');
    return {
      sentAt,
      answeredAt: this.deps.now(),
      exchange: {
        id: ask.id,
        type: ask.type,
        name: ask.name,
        arguments: args,
        status: answer.status,
        status_code: answer.status_code,
        error: answer.error,
        result: answer.body.slice(0, MAX_RESULT_CHARS),
        latency_ms: answer.latency_ms,
      },
      intent: ask.intent ?? null,
      entities: entitiesOf(args),
    };
  }
}

/** JSON text as a value (the text itself when it is not JSON). */
function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** An object's fields as an outcome's entities: strings and numbers as they are, anything else as its JSON. */
function entitiesOf(args: unknown): Record<string, string | number> {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return args === undefined || args === '' ? {} : { arguments: JSON.stringify(args) };
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, typeof v === 'string' || typeof v === 'number' ? v : JSON.stringify(v)]));
}

/** A request's transcript turn (times in seconds from the answer, by `clock`). */
export function toolTurn(entry: ToolEntry, clock: (at: number) => number): Turn {
  const { exchange } = entry;
  return { role: 'tool', text: `${exchange.name}: ${exchange.status}`, start: clock(entry.sentAt), end: clock(entry.answeredAt), tool: exchange };
}

/** What an LLM is told of a request's answer (its `tool` message): the body on success, else why it failed. */
export function toolResult(entry: ToolEntry): string {
  const x = entry.exchange;
  if (x.status === 'ok') return x.result || '{"ok":true}';
  const why =
    x.status === 'timeout'
      ? 'the request timed out'
      : x.status === 'refused'
        ? `the request was refused${x.status_code ? ` (HTTP ${x.status_code})` : `: ${x.error}`}`
        : `the request failed (${x.error})`;
  return JSON.stringify({ error: why, ...(x.result ? { answer: x.result } : {}) });
}

/** The pack response an action's answer chooses: the integrator's `response_id` (one the pack has), else the action's own; the apology when it failed. */
export function responseFor(entry: ToolEntry, own: string, packHas: (id: string) => boolean): string {
  if (entry.exchange.status !== 'ok') return FAILED_RESPONSE;
  const chosen = (parsed(entry.exchange.result) as { response_id?: unknown } | null)?.response_id;
  return typeof chosen === 'string' && packHas(chosen) ? chosen : own;
}

/** An LLM's streamed tool calls, gathered as they come and sent once its stream ended. */
export class ToolRound {
  private readonly parts = new Map<number, { id: string; name: string; arguments: string }>();
  private sent: Promise<ToolEntry>[] = [];

  constructor(private readonly tools: CallTools) {}

  get definitions(): ToolDefinition[] {
    return this.tools.definitions;
  }

  collect(deltas: ToolCallDelta[]): void {
    for (const d of deltas) {
      const part = this.parts.get(d.index) ?? { id: '', name: '', arguments: '' };
      if (d.id) part.id = d.id;
      if (d.function.name) part.name += d.function.name;
      if (d.function.arguments) part.arguments += d.function.arguments;
      this.parts.set(d.index, part);
    }
  }

  /** The stream ended: the calls it made, sent now. `cut` (a barge-in, the timeout): none is, its calls may be incomplete. */
  finish(cut: boolean): ToolCall[] {
    if (cut) this.parts.clear();
    const calls: ToolCall[] = [...this.parts.entries()]
      .sort(([a], [b]) => a - b)
      .filter(([, p]) => p.name !== '')
      .map(([i, p]) => ({ id: p.id || `call_${i}`, type: 'function', function: { name: p.name, arguments: p.arguments } }));
    this.sent = calls.map((c) => this.tools.send({ id: c.id, type: 'function', name: c.function.name, arguments: c.function.arguments }));
    return calls;
  }

  /** Whether the stream asked for tools. */
  get asked(): boolean {
    return this.sent.length > 0;
  }

  /** The answers, in the calls' order. */
  answers(): Promise<ToolEntry[]> {
    return Promise.all(this.sent);
  }
}
