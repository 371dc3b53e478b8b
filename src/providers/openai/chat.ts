// Chat completions against any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp server,
// Groq, Together...). The request is rebuilt from the fields we know, so nothing the client sent
// beyond them reaches the upstream; streams ask for the final usage chunk.
import { routeHost, type UpstreamHttp } from '../http.ts';
import type { SseMessage } from '../sse.ts';
import { scrub } from '../upstream-errors.ts';
import { isObject, openaiUsageOf, protocolError, type Json } from '../validate.ts';
import {
  PASSED_THROUGH,
  UpstreamError,
  type ChatCapability,
  type ChatChunk,
  type ChatMessage,
  type ChatRequest,
  type ToolCall,
  type ToolCallDelta,
  type ChatResult,
  type ChoiceLogprobs,
  type ResolvedRoute,
  type TokenLogprob,
} from '../types.ts';
import { openaiCall } from './call.ts';

export function openaiChat(http: UpstreamHttp): ChatCapability {
  return {
    async complete(route, req, signal) {
      const json = await http.postJson(openaiCall(route, '/chat/completions', chatBody(route, req, false), signal));
      return parseCompletion(route.id, json, req.logprobs === true);
    },
    async stream(route, req, signal) {
      const events = await http.openSse(openaiCall(route, '/chat/completions', chatBody(route, req, true), signal));
      return parseStream(route, events, req.logprobs === true);
    },
  };
}

/** The request's fields an OpenAI-compatible server takes under the same name and shape. */
const AS_GIVEN = [...PASSED_THROUGH, 'response_format', 'safety_identifier', 'user', 'prompt_cache_key'] as const satisfies readonly (keyof ChatRequest)[];

export function chatBody(route: ResolvedRoute, req: ChatRequest, stream: boolean): Json {
  const body: Json = {
    model: route.upstreamModel,
    messages: req.messages.map(messageBody),
  };
  for (const k of AS_GIVEN) if (req[k] !== undefined) body[k] = req[k];
  if (req.max_tokens !== undefined) body[isOpenAIItself(route) ? 'max_completion_tokens' : 'max_tokens'] = req.max_tokens;
  if (req.stop !== undefined && req.stop.length > 0) body.stop = req.stop;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/** A message in OpenAI's shape: the tool fields only when present. */
function messageBody(m: ChatMessage): Json {
  const out: Json = { role: m.role, content: m.content };
  if (m.tool_calls !== undefined) out.tool_calls = m.tool_calls;
  if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
  return out;
}

/** A tool call of an answer, rebuilt from OpenAI's fields; null when malformed. */
function toolCallOf(v: unknown): ToolCall | null {
  if (!isObject(v) || typeof v.id !== 'string' || !isObject(v.function)) return null;
  const { name, arguments: args } = v.function;
  if (typeof name !== 'string' || typeof args !== 'string') return null;
  return { id: v.id, type: 'function', function: { name, arguments: args } };
}

/** A streamed tool-call piece, rebuilt from OpenAI's fields; null when malformed. */
function toolCallDeltaOf(v: unknown): ToolCallDelta | null {
  if (!isObject(v)) return null;
  const index = choiceIndex(v.index);
  const fn = v.function ?? {};
  if (index === null || !isObject(fn)) return null;
  const out: ToolCallDelta = { index, function: {} };
  if (typeof v.id === 'string') {
    out.id = v.id;
    out.type = 'function';
  }
  if (typeof fn.name === 'string') out.function.name = fn.name;
  if (typeof fn.arguments === 'string') out.function.arguments = fn.arguments;
  return out;
}

/** A list of tool calls (or their deltas), each checked; undefined when absent or empty. */
function toolCallsOf<T>(routeId: string, v: unknown, each: (v: unknown) => T | null): T[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v) || v.length > 1024) throw protocolError(routeId, 'tool_calls is malformed');
  const out = v.map((t: unknown) => {
    const call = each(t);
    if (call === null) throw protocolError(routeId, 'a tool call is malformed');
    return call;
  });
  return out.length > 0 ? out : undefined;
}

/**
 * OpenAI's own API deprecated `max_tokens` and its reasoning models refuse it; the compatible
 * servers (vLLM, Ollama, llama.cpp, Groq, Together) all take `max_tokens`.
 */
function isOpenAIItself(route: ResolvedRoute): boolean {
  return routeHost(route) === 'api.openai.com';
}

const MAX_TOP_LOGPROBS = 20;

/** One token's entry rebuilt from known fields; null when malformed. */
function tokenLogprob(v: unknown): TokenLogprob | null {
  if (!isObject(v) || typeof v.token !== 'string' || typeof v.logprob !== 'number' || !Number.isFinite(v.logprob) || v.logprob > 0) return null;
  let bytes: number[] | null = null;
  if (v.bytes !== undefined && v.bytes !== null) {
    if (!Array.isArray(v.bytes) || !v.bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)) return null;
    bytes = v.bytes as number[];
  }
  return { token: v.token, logprob: v.logprob, bytes };
}

/**
 * A choice's `logprobs`, rebuilt from the fields OpenAI documents (so nothing else an upstream adds
 * passes through) and checked: finite log probabilities ≤ 0, bytes 0..255, at most 20 alternatives.
 * Null when absent or null; a protocol error when malformed.
 */
export function logprobsOf(routeId: string, v: unknown): ChoiceLogprobs | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v) || (v.content !== null && v.content !== undefined && !Array.isArray(v.content))) throw protocolError(routeId, 'logprobs is malformed');
  if (!Array.isArray(v.content)) return { content: null, refusal: null };
  const content = v.content.map((entry: unknown) => {
    const own = tokenLogprob(entry);
    const top = isObject(entry) && Array.isArray(entry.top_logprobs) ? entry.top_logprobs : [];
    if (!own || top.length > MAX_TOP_LOGPROBS) throw protocolError(routeId, 'a logprobs entry is malformed');
    const alternatives: TokenLogprob[] = [];
    for (const t of top as unknown[]) {
      const alternative = tokenLogprob(t);
      if (!alternative) throw protocolError(routeId, 'a top_logprobs entry is malformed');
      alternatives.push(alternative);
    }
    return { ...own, top_logprobs: alternatives };
  });
  return { content, refusal: null };
}

export function parseCompletion(routeId: string, json: unknown, wantLogprobs = false): ChatResult {
  if (!isObject(json) || !Array.isArray(json.choices) || json.choices.length === 0) {
    throw protocolError(routeId, 'no choices');
  }
  const choices = json.choices.map((c: unknown, i: number) => {
    if (!isObject(c) || !isObject(c.message)) throw protocolError(routeId, 'a choice has no message');
    const { content } = c.message;
    if (content !== null && content !== undefined && typeof content !== 'string') {
      throw protocolError(routeId, 'a message content is not text');
    }
    const toolCalls = toolCallsOf(routeId, c.message.tool_calls, toolCallOf);
    const choice: ChatResult['choices'][number] = {
      index: choiceIndex(c.index) ?? i,
      // Null only beside tool calls (OpenAI's shape); otherwise the spec's string.
      message: { role: 'assistant' as const, content: content ?? (toolCalls ? null : '') },
      finish_reason: typeof c.finish_reason === 'string' ? c.finish_reason : 'stop',
    };
    if (toolCalls) choice.message.tool_calls = toolCalls;
    if (wantLogprobs) choice.logprobs = logprobsOf(routeId, c.logprobs);
    return choice;
  });
  return { choices, usage: isObject(json.usage) ? openaiUsageOf(json.usage) : null };
}

/**
 * Translates stream events to chunks. Chunks with nothing for the client (a reasoning delta, an
 * empty keep-alive) are dropped. The stream must end with `[DONE]` or, for servers that omit it,
 * after a finish_reason; an earlier end is a cut-off stream and throws.
 */
export async function* parseStream(route: ResolvedRoute, events: AsyncIterable<SseMessage>, wantLogprobs = false): AsyncGenerator<ChatChunk> {
  let finished = false;
  for await (const m of events) {
    if (m.type === 'done') return;
    const chunk = parseChunk(route, m.data, wantLogprobs);
    if (chunk.choices.some((c) => c.finish_reason)) finished = true;
    if (chunk.choices.length > 0 || chunk.usage) yield chunk;
  }
  if (!finished) throw protocolError(route.id, 'the stream ended before it finished');
}

function parseChunk(route: ResolvedRoute, d: unknown, wantLogprobs: boolean): ChatChunk {
  if (!isObject(d)) throw protocolError(route.id, 'an event is not an object');
  if (d.error !== undefined && d.error !== null) {
    // vLLM, OpenRouter and others report a failure inside the stream this way.
    const said = isObject(d.error) && typeof d.error.message === 'string' ? d.error.message : undefined;
    throw new UpstreamError('http', `route ${route.id}: upstream failed mid-stream`, true, undefined, said && scrub(said, [route.apiKey]));
  }
  const raw = d.choices ?? [];
  if (!Array.isArray(raw)) throw protocolError(route.id, 'choices is not a list');
  const choices: ChatChunk['choices'] = [];
  for (const c of raw as unknown[]) {
    if (!isObject(c)) throw protocolError(route.id, 'a choice is not an object');
    const index = choiceIndex(c.index ?? 0);
    const delta = c.delta ?? {};
    if (index === null || !isObject(delta)) throw protocolError(route.id, 'a choice is malformed');
    const out: ChatChunk['choices'][number] = { index, delta: {} };
    if (delta.role === 'assistant') out.delta.role = 'assistant';
    if (typeof delta.content === 'string' && (delta.content !== '' || out.delta.role)) out.delta.content = delta.content;
    const toolCalls = toolCallsOf(route.id, delta.tool_calls, toolCallDeltaOf);
    if (toolCalls) out.delta.tool_calls = toolCalls;
    if (typeof c.finish_reason === 'string') out.finish_reason = c.finish_reason;
    // Only asked-for logprobs are read (an upstream that sends them unasked costs nothing).
    const logprobs = wantLogprobs ? logprobsOf(route.id, c.logprobs) : null;
    if (logprobs?.content?.length) out.logprobs = logprobs;
    if (out.delta.role || out.delta.content || out.delta.tool_calls || out.finish_reason || out.logprobs) choices.push(out);
  }
  const usage = isObject(d.usage) ? openaiUsageOf(d.usage) : null;
  return usage ? { choices, usage } : { choices };
}

function choiceIndex(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v < 1024 ? v : null;
}
