// Chat through Anthropic's Messages API (POST {base_url}/v1/messages; base_url without the version,
// as in Anthropic's SDK: https://api.anthropic.com), translated to and from the OpenAI shapes.
//
// Request: system messages → `system` (joined in order with a blank line; one placed mid-
// conversation moves to the top, the only place Anthropic takes it); consecutive turns of one role
// merged; `max_tokens` from the request or `defaultMaxTokens` (Anthropic requires it); `stop` →
// `stop_sequences`; temperature clamped to Anthropic's 0..1; `reasoning_effort` → extended thinking
// with a token budget (THINKING_BUDGET, kept under max_tokens; `none` → no thinking); the opaque
// `safety_identifier` (else `user`) → `metadata.user_id`; `prompt_cache_key` dropped (Anthropic
// caches by `cache_control` marks, not by key). What the Messages API has no equivalent for is
// refused (`refuses`, so the router can pass the route over for the model's next one): n > 1, a
// conversation that does not start with a user turn, `seed`, `presence_penalty`,
// `frequency_penalty`, `logit_bias`, `verbosity`, `logprobs`, a JSON `response_format` (`text` is
// what it does anyway), and with thinking what Anthropic refuses beside it (temperature below 1,
// top_p below 0.95, a prefilled assistant turn, max_tokens too small for the smallest budget).
// Answer: text blocks joined (thinking blocks dropped), tool_use blocks → tool_calls (tools.ts);
// stop_reason → finish_reason.
// Tools, both ways: see tools.ts. Stream: message_start → the role chunk; text deltas → content chunks; message_delta → the
// finish_reason chunk; message_stop → the usage chunk (input tokens from message_start, output from
// the last message_delta); ping ignored; an `error` event throws.
import { routeUrl, type UpstreamCall, type UpstreamHttp } from '../http.ts';
import type { SseMessage } from '../sse.ts';
import { scrub } from '../upstream-errors.ts';
import { isObject, protocolError, tokenCount, usageOf, type Json } from '../validate.ts';
import type { CancelSignal } from '../cancel.ts';
import {
  UpstreamError,
  type ChatCapability,
  type ChatChunk,
  type ChatRequest,
  type ChatResult,
  type ReasoningEffort,
  type Refusal,
  type ResolvedRoute,
  type TokenUsage,
} from '../types.ts';

import { anthropicTools, mergeContent, toolArgumentsRefusal, toolCallDelta, toolCallsOf, toTurn, type Turn } from './tools.ts';

export const ANTHROPIC_VERSION = '2023-06-01';
export const DEFAULT_MAX_TOKENS = 4096;
/**
 * Extended-thinking budgets for OpenAI's reasoning_effort, in tokens (Anthropic's minimum is 1,024;
 * the budget must stay under max_tokens, so it is cut to max_tokens - 1 where that is smaller).
 */
export const THINKING_BUDGET: Record<Exclude<ReasoningEffort, 'none'>, number> = {
  minimal: 1024,
  low: 2048,
  medium: 8192,
  high: 16384,
  xhigh: 32768,
};
const MIN_THINKING_BUDGET = 1024;

export interface AnthropicOptions {
  /** `max_tokens` when the request names none. */
  defaultMaxTokens?: number;
}

export function anthropicChat(http: UpstreamHttp, opts: AnthropicOptions = {}): ChatCapability {
  const defaultMaxTokens = opts.defaultMaxTokens ?? DEFAULT_MAX_TOKENS;
  return {
    refuses: (req) => anthropicRefuses(req, defaultMaxTokens),
    async complete(route, req, signal) {
      const json = await http.postJson(messagesCall(route, toAnthropic(route, req, false, defaultMaxTokens), signal));
      return fromAnthropic(route.id, json);
    },
    async stream(route, req, signal) {
      const events = await http.openSse(messagesCall(route, toAnthropic(route, req, true, defaultMaxTokens), signal));
      return anthropicChunks(route, events);
    },
  };
}

function messagesCall(route: ResolvedRoute, body: Json, signal: CancelSignal): UpstreamCall {
  if (!route.apiKey) throw new UpstreamError('config', `route ${route.id} has no API key`, false);
  return {
    routeId: route.id,
    url: routeUrl(route, '/v1/messages'),
    headers: { 'x-api-key': route.apiKey, 'anthropic-version': ANTHROPIC_VERSION },
    body,
    timeoutMs: route.timeoutMs,
    signal,
    secrets: [route.apiKey],
  };
}

function refuse(route: ResolvedRoute, why: string): UpstreamError {
  return new UpstreamError('client', `route ${route.id}: ${why}`, false, 400, why);
}

/** Whether `req` asks for extended thinking. */
function thinks(req: ChatRequest): req is ChatRequest & { reasoning_effort: Exclude<ReasoningEffort, 'none'> } {
  return req.reasoning_effort !== undefined && req.reasoning_effort !== 'none';
}

/** The first parameter of `req` the Messages API cannot honour, if any. */
export function anthropicRefuses(req: ChatRequest, defaultMaxTokens = DEFAULT_MAX_TOKENS): Refusal | undefined {
  if (req.n !== undefined && req.n > 1) return { param: 'n', message: 'n greater than 1 is not supported by this model' };
  for (const param of ['seed', 'presence_penalty', 'frequency_penalty', 'logit_bias', 'verbosity'] as const) {
    if (req[param] !== undefined) return { param, message: `${param} is not supported by this model` };
  }
  if (req.logprobs === true) return { param: 'logprobs', message: 'logprobs is not supported by this model' };
  if (req.response_format && req.response_format.type !== 'text') {
    return { param: 'response_format', message: `response_format ${req.response_format.type} is not supported by this model` };
  }
  const first = req.messages.find((m) => m.role !== 'system');
  if (!first) return { param: 'messages', message: 'at least one user message is required by this model' };
  const badArguments = toolArgumentsRefusal(req);
  if (badArguments) return badArguments;
  if (first.role !== 'user') return { param: 'messages', message: 'the conversation must start with a user message for this model' };
  if (thinks(req)) {
    // What Anthropic refuses beside extended thinking.
    const with_ = `with reasoning_effort ${req.reasoning_effort} by this model`;
    if ((req.max_tokens ?? defaultMaxTokens) <= MIN_THINKING_BUDGET) {
      return { param: 'reasoning_effort', message: `reasoning_effort ${req.reasoning_effort} needs max_tokens above ${MIN_THINKING_BUDGET} on this model` };
    }
    if (req.temperature !== undefined && req.temperature < 1) return { param: 'temperature', message: `temperature below 1 is not supported ${with_}` };
    if (req.top_p !== undefined && req.top_p < 0.95) return { param: 'top_p', message: `top_p below 0.95 is not supported ${with_}` };
    if (req.messages[req.messages.length - 1]!.role === 'assistant') {
      return { param: 'messages', message: `a final assistant message (prefill) is not supported ${with_}` };
    }
  }
  return undefined;
}

export function toAnthropic(route: ResolvedRoute, req: ChatRequest, stream: boolean, defaultMaxTokens = DEFAULT_MAX_TOKENS): Json {
  const refusal = anthropicRefuses(req, defaultMaxTokens);
  if (refusal) throw refuse(route, refusal.message);
  const system: string[] = [];
  const turns: Turn[] = [];
  for (const m of req.messages) {
    if (m.role === 'system') {
      system.push(m.content ?? '');
      continue;
    }
    const turn = toTurn(m);
    const last = turns[turns.length - 1];
    if (last && last.role === turn.role) last.content = mergeContent(last.content, turn.content);
    else turns.push(turn);
  }
  const final = turns[turns.length - 1];
  // Anthropic refuses a prefilled assistant turn that ends in whitespace.
  if (final && final.role === 'assistant' && typeof final.content === 'string') final.content = final.content.trimEnd();

  const maxTokens = req.max_tokens ?? defaultMaxTokens;
  const body: Json = { model: route.upstreamModel, max_tokens: maxTokens, messages: turns };
  if (system.length > 0) body.system = system.join('\n\n');
  if (req.temperature !== undefined) body.temperature = Math.min(Math.max(req.temperature, 0), 1);
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (req.stop !== undefined && req.stop.length > 0) body.stop_sequences = req.stop;
  if (thinks(req)) body.thinking = { type: 'enabled', budget_tokens: Math.min(THINKING_BUDGET[req.reasoning_effort], maxTokens - 1) };
  const endUser = req.safety_identifier ?? req.user;
  if (endUser !== undefined) body.metadata = { user_id: endUser };
  Object.assign(body, anthropicTools(req));
  if (stream) body.stream = true;
  return body;
}

// The upstream's words are looked up in Maps: an object literal would answer "constructor" or
// "toString" with Object.prototype's members.
const FINISH = new Map<string, string>([
  ['end_turn', 'stop'],
  ['stop_sequence', 'stop'],
  ['max_tokens', 'length'],
  ['tool_use', 'tool_calls'],
  ['refusal', 'content_filter'],
  ['pause_turn', 'stop'],
]);

export function finishReason(stop: unknown): string {
  return (typeof stop === 'string' && FINISH.get(stop)) || 'stop';
}

/** The prompt's tokens, and of them those read from the cache when Anthropic reports them. */
interface PromptTokens {
  total: number;
  cached?: number;
}

/**
 * Anthropic counts cached prompt tokens apart from input_tokens; the prompt is all of them, and the
 * cache reads (`cache_read_input_tokens`), part of that total, are what OpenAI calls cached tokens.
 */
function promptTokens(usage: Json): PromptTokens | null {
  const input = tokenCount(usage.input_tokens);
  if (input === null) return null;
  const prompt: PromptTokens = { total: input };
  for (const k of ['cache_creation_input_tokens', 'cache_read_input_tokens'] as const) {
    if (usage[k] === undefined || usage[k] === null) continue;
    const n = tokenCount(usage[k]);
    if (n === null) return null;
    prompt.total += n;
    if (k === 'cache_read_input_tokens') prompt.cached = n;
  }
  return prompt;
}

/** OpenAI-shaped usage from Anthropic's counts. */
function usageFrom(prompt: PromptTokens | null, output: unknown): TokenUsage | null {
  const usage = usageOf(prompt?.total ?? null, output);
  if (usage && prompt?.cached !== undefined) usage.cached_tokens = prompt.cached;
  return usage;
}

export function fromAnthropic(routeId: string, json: unknown): ChatResult {
  if (!isObject(json) || !Array.isArray(json.content)) throw protocolError(routeId, 'no content');
  let text = '';
  for (const block of json.content as unknown[]) {
    if (!isObject(block)) throw protocolError(routeId, 'a content block is not an object');
    if (block.type === 'text') {
      if (typeof block.text !== 'string') throw protocolError(routeId, 'a text block has no text');
      text += block.text;
    }
  }
  const toolCalls = toolCallsOf(routeId, json.content as Json[]);
  const usage = isObject(json.usage) ? usageFrom(promptTokens(json.usage), json.usage.output_tokens) : null;
  const message: ChatResult['choices'][number]['message'] = { role: 'assistant', content: text === '' && toolCalls ? null : text };
  if (toolCalls) message.tool_calls = toolCalls;
  return { choices: [{ index: 0, message, finish_reason: finishReason(json.stop_reason) }], usage };
}

const ERROR_TYPES = new Map<string, [UpstreamError['kind'], number]>([
  ['invalid_request_error', ['client', 400]],
  ['request_too_large', ['client', 413]],
  ['authentication_error', ['config', 401]],
  ['permission_error', ['config', 403]],
  ['not_found_error', ['config', 404]],
  ['rate_limit_error', ['http', 429]],
  ['api_error', ['http', 500]],
  ['overloaded_error', ['http', 529]],
]);

/** An `error` event in the stream, classified as its HTTP twin would be. */
function streamError(route: ResolvedRoute, data: Json): UpstreamError {
  const err = isObject(data.error) ? data.error : {};
  const [kind, status] = (typeof err.type === 'string' && ERROR_TYPES.get(err.type)) || ['http', 500];
  const said = typeof err.message === 'string' ? scrub(err.message, [route.apiKey]) : undefined;
  const retryable = kind === 'http';
  return new UpstreamError(kind, `route ${route.id}: upstream failed mid-stream (${status})`, retryable, status, said);
}

export async function* anthropicChunks(route: ResolvedRoute, events: AsyncIterable<SseMessage>): AsyncGenerator<ChatChunk> {
  let started = false;
  let prompt: PromptTokens | null = null;
  let output: number | null = null;
  /** Anthropic's content-block index of each tool_use block → its index among the tool calls. */
  const toolBlocks = new Map<number, number>();
  const roleOnce = function* (): Generator<ChatChunk> {
    if (started) return;
    started = true;
    yield { choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] };
  };
  for await (const m of events) {
    if (m.type === 'done') break;
    const d = m.data;
    if (!isObject(d)) throw protocolError(route.id, 'an event is not an object');
    switch (d.type) {
      case 'message_start': {
        const usage = isObject(d.message) && isObject(d.message.usage) ? d.message.usage : {};
        prompt = promptTokens(usage);
        output = tokenCount(usage.output_tokens);
        yield* roleOnce();
        break;
      }
      case 'content_block_start':
      case 'content_block_delta': {
        const part = d.type === 'content_block_start' ? d.content_block : d.delta;
        if (!isObject(part)) throw protocolError(route.id, `${d.type} has no block`);
        const call = toolCallDelta(route.id, d, part, toolBlocks);
        if (call) {
          yield* roleOnce();
          yield { choices: [{ index: 0, delta: { tool_calls: [call] } }] };
          break;
        }
        const text = part.type === 'text' || part.type === 'text_delta' ? part.text : undefined;
        if (text !== undefined && typeof text !== 'string') throw protocolError(route.id, 'a text delta has no text');
        if (text) {
          yield* roleOnce();
          yield { choices: [{ index: 0, delta: { content: text } }] };
        }
        break;
      }
      case 'message_delta': {
        if (isObject(d.usage)) {
          // output_tokens is cumulative; newer API versions may restate input tokens here too.
          output = tokenCount(d.usage.output_tokens);
          if (d.usage.input_tokens !== undefined) {
            prompt = promptTokens(d.usage);
          }
        }
        const delta = isObject(d.delta) ? d.delta : {};
        if (delta.stop_reason !== undefined && delta.stop_reason !== null) {
          yield* roleOnce();
          yield { choices: [{ index: 0, delta: {}, finish_reason: finishReason(delta.stop_reason) }] };
        }
        break;
      }
      case 'message_stop': {
        const usage: TokenUsage | null = usageFrom(prompt, output);
        if (usage) yield { choices: [], usage };
        return;
      }
      case 'error':
        throw streamError(route, d);
      default:
        // ping, content_block_stop, and event types added after this was written.
        break;
    }
  }
  throw protocolError(route.id, 'the stream ended before message_stop');
}
