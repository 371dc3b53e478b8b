// The metered chat path, shared by the non-streaming and streaming endpoint:
//   validate → resolve the model on the caller's account → KYC → per-key limits → count the prompt
//   and check the context window → hold an estimate → upstream (router, failover) → settle the
//   exact cost once (or release) → usage record.
// The HTTP route only translates: body in, completion or SSE chunks out.
import { randomUUID } from 'node:crypto';
import { ApiError, echo } from '../errors.ts';
import type { UsageFacts } from '../billing/types.ts';
import type { CallFacts, MeteredCall } from '../metering/meter.ts';
import type { ModelDoc } from '../models/types.ts';
import {
  copyDefined,
  PASSED_THROUGH,
  type ChatChoice,
  type ChatChunk,
  type ChatMessage,
  type ChatRequest,
  type ResolvedRoute,
  type ResponseFormat,
  type TokenUsage,
} from '../providers/types.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import { countMessages, countText, countTools, PromptTokens } from './tokens.ts';
import { CHAT_ROLES, roleRefusal } from './chat-input.ts';
import { priceOfTokens } from '../billing/pricing.ts';
import type { GatewayDeps } from '../metering/endpoints.ts';
import { toApiError, unservedStatus } from '../metering/outcomes.ts';
import type { CancelSignal } from '../providers/cancel.ts';

export interface ChatBody extends Pick<ChatRequest, (typeof PASSED_THROUGH)[number]> {
  model: string;
  messages: {
    role: string;
    content?: string | ({ type: string } & Record<string, unknown>)[] | null;
    tool_calls?: ChatMessage['tool_calls'];
    tool_call_id?: string;
  }[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  max_tokens?: number;
  /** OpenAI's newer name for max_tokens; either may be sent, both only if equal. */
  max_completion_tokens?: number;
  stop?: string | string[];
  /** As the route's schema lets it in; `responseFormat` checks the pairing. */
  response_format?: { type: ResponseFormat['type']; json_schema?: { name: string } };
  /** End-user and cache-routing hints: passed on only as opaque ids (`GatewayDeps.opaqueId`). */
  safety_identifier?: string;
  user?: string;
  prompt_cache_key?: string;
}

/** A call that passed every check and holds its estimate; settle or release it exactly once. */
export interface PreparedChat {
  id: string;
  created: number;
  model: ModelDoc;
  /** The metered call: its hold, payer and request id; settled or released once. */
  call: MeteredCall;
  request: ChatRequest;
  /** The prompt's tokens: bounded at once, counted exactly only if a usage of our own is needed. */
  prompt: PromptTokens;
  routes: ResolvedRoute[];
  /** The client's end-user id as sent (`safety_identifier`, else `user`), for the usage record. */
  endUser?: string;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: AnswerChoice[];
  usage: UsageObject;
}

/**
 * A choice as OpenAI's CreateChatCompletionResponse requires it: `logprobs` (null unless asked
 * for) and `message.refusal` always there (null: refusals are never relayed apart from the text).
 */
export interface AnswerChoice {
  index: number;
  message: ChatChoice['message'] & { refusal: null };
  logprobs: NonNullable<ChatChoice['logprobs']> | null;
  finish_reason: string;
}

/** OpenAI's usage object; the cached and reasoning details only when the upstream reported them. */
interface UsageObject {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  completion_tokens_details?: { reasoning_tokens: number };
}

function usageObject(u: TokenUsage): UsageObject {
  const out: UsageObject = { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.prompt_tokens + u.completion_tokens };
  if (u.cached_tokens !== undefined) out.prompt_tokens_details = { cached_tokens: u.cached_tokens };
  if (u.reasoning_tokens !== undefined) out.completion_tokens_details = { reasoning_tokens: u.reasoning_tokens };
  return out;
}

export interface ChatStream {
  /** The chunks to send, in OpenAI's chunk shape; ends with a usage chunk when asked for. */
  chunks: AsyncGenerator<Record<string, unknown>>;
}

/** OpenAI's array of content parts, text only, as one string (parts joined in order, as the model reads them). */
function joinTextParts(parts: ({ type: string } & Record<string, unknown>)[], message: number): string {
  return parts
    .map((part, j) => {
      const at = `messages.${message}.content.${j}`;
      if (part.type !== 'text')
        throw new ApiError('invalid_request', `Only text content parts are supported; ${at} is of type '${echo(part.type)}'.`, { param: `${at}.type` });
      if (typeof part.text !== 'string') throw new ApiError('invalid_request', `${at}.text must be a string.`, { param: `${at}.text` });
      if (part.text.length > 1_000_000) throw new ApiError('invalid_request', `${at}.text is longer than 1,000,000 characters.`, { param: `${at}.text` });
      const unknown = Object.keys(part).find((k) => k !== 'type' && k !== 'text');
      if (unknown !== undefined) throw new ApiError('invalid_request', `Unknown field '${at}.${echo(unknown)}'.`, { param: `${at}.${echo(unknown)}` });
      return part.text;
    })
    .join('');
}

/**
 * The messages as passed on: text parts joined, tool fields only where they belong. A `tool`
 * message is only converted here: whether the model takes it at all comes first (toolMessagesChecked).
 */
function chatMessages(body: ChatBody): ChatMessage[] {
  return body.messages.map((m, i) => {
    if (!CHAT_ROLES.has(m.role)) throw roleRefusal(i, m.role);
    const at = `messages.${i}`;
    const out: ChatMessage = { role: m.role as ChatMessage['role'], content: null };
    if (m.role === 'tool') {
      if (typeof m.content === 'string') out.content = m.content;
      if (m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
      return out;
    }
    if (typeof m.content === 'string') out.content = m.content;
    else if (Array.isArray(m.content)) out.content = joinTextParts(m.content, i);
    if (m.tool_calls !== undefined) {
      if (m.role !== 'assistant') throw new ApiError('invalid_request', `${at}.tool_calls goes only on an assistant message.`, { param: `${at}.tool_calls` });
      if (m.tool_calls.length > 0) out.tool_calls = m.tool_calls;
    }
    if (m.tool_call_id !== undefined) throw new ApiError('invalid_request', `${at}.tool_call_id goes only on a tool message.`, { param: `${at}.tool_call_id` });
    if (out.content === null && out.tool_calls === undefined) {
      throw new ApiError('missing_input', `Missing required field '${at}.content' (only an assistant message with tool_calls may omit it).`, {
        param: `${at}.content`,
      });
    }
    return out;
  });
}

const TOOL_PARAMS = ['tools', 'tool_choice', 'parallel_tool_calls'] as const;

/**
 * For a model without tool calling, the spec's contract exactly: a `tool` message is
 * invalid_message_role, any other tool field invalid_request naming it; each says why. For a model
 * with it, each `tool` message carries its call id and its content (text or text parts).
 */
function toolMessagesChecked(model: ModelDoc, body: ChatBody, messages: ChatMessage[]): void {
  if (model.tools !== true) {
    const why = `tool calling is not enabled for model '${model._id}'`;
    const tool = messages.findIndex((m) => m.role === 'tool');
    if (tool >= 0) throw roleRefusal(tool, 'tool', `${why}; use system, user or assistant`);
    const calls = messages.findIndex((m) => m.tool_calls !== undefined);
    const param = TOOL_PARAMS.find((k) => body[k] !== undefined) ?? (calls >= 0 ? `messages.${calls}.tool_calls` : undefined);
    if (param !== undefined) throw new ApiError('invalid_request', `${param}: ${why}.`, { param });
    return;
  }
  messages.forEach((m, i) => {
    if (m.role !== 'tool') return;
    const sent = body.messages[i]!;
    const at = `messages.${i}`;
    if (sent.tool_calls !== undefined)
      throw new ApiError('invalid_request', `${at}.tool_calls goes only on an assistant message.`, { param: `${at}.tool_calls` });
    if (m.tool_call_id === undefined) throw new ApiError('missing_input', `Missing required field '${at}.tool_call_id'.`, { param: `${at}.tool_call_id` });
    if (Array.isArray(sent.content)) m.content = joinTextParts(sent.content, i);
    if (m.content === null) throw new ApiError('missing_input', `Missing required field '${at}.content'.`, { param: `${at}.content` });
  });
}

/** OpenAI's response_format: `json_schema` goes with type json_schema, and only with it. */
function responseFormat(body: ChatBody): ResponseFormat | undefined {
  const rf = body.response_format;
  if (rf === undefined) return undefined;
  if (rf.type === 'json_schema' && rf.json_schema === undefined) {
    throw new ApiError('missing_input', "Missing required field 'response_format.json_schema'.", { param: 'response_format.json_schema' });
  }
  if (rf.type !== 'json_schema' && rf.json_schema !== undefined) {
    throw new ApiError('invalid_request', `response_format.json_schema goes only with type json_schema, not ${rf.type}.`, {
      param: 'response_format.json_schema',
    });
  }
  return rf as ResponseFormat;
}

/**
 * The output cap the client asked for, under whichever of OpenAI's two names it used (`max_tokens`
 * as the translating route calls it: the Responses API's `max_output_tokens`).
 */
function outputLimit(body: ChatBody, maxTokensName: string): { maxTokens: number | undefined; maxTokensParam: string } {
  if (body.max_completion_tokens === undefined) return { maxTokens: body.max_tokens, maxTokensParam: maxTokensName };
  if (body.max_tokens !== undefined && body.max_tokens !== body.max_completion_tokens) {
    throw new ApiError('invalid_request', 'max_tokens and max_completion_tokens differ; send one of them.', { param: 'max_completion_tokens' });
  }
  return { maxTokens: body.max_completion_tokens, maxTokensParam: 'max_completion_tokens' };
}

export class ChatGateway {
  constructor(private readonly deps: GatewayDeps) {}

  /** `maxTokensName`: the client's name for `max_tokens`, for a refusal to name (a route that translates another API). */
  async prepare(principal: ApiKeyPrincipal, body: ChatBody, requestId: string, maxTokensName = 'max_tokens'): Promise<PreparedChat> {
    if (!Array.isArray(body.messages) || body.messages.length === 0) {
      throw new ApiError('missing_input', 'messages must hold at least one message.', { param: 'messages' });
    }
    const messages = chatMessages(body);
    const { maxTokens, maxTokensParam } = outputLimit(body, maxTokensName);
    if (body.top_logprobs !== undefined && body.logprobs !== true) {
      throw new ApiError('invalid_request', 'top_logprobs requires logprobs to be true.', { param: 'top_logprobs' });
    }
    const format = responseFormat(body);
    const call = await this.deps.meter.begin(principal, {
      model: body.model,
      type: 'llm',
      requestId,
      check: (model) => {
        toolMessagesChecked(model, body, messages);
        // The model's public `reasoning` says whether it thinks; an effort for one that does not is
        // a mistake to report, not a hint to drop (OpenAI answers 400 too).
        if (body.reasoning_effort !== undefined && model.reasoning !== true) {
          throw new ApiError('invalid_request', 'reasoning_effort is not supported by this model: it is not a reasoning model.', { param: 'reasoning_effort' });
        }
        // A JSON schema to answer in, and the tools offered, are part of the prompt the upstream reads (and bills).
        const schema = format?.type === 'json_schema' ? JSON.stringify(format.json_schema) : '';
        const prompt = new PromptTokens((measure) => countMessages(messages, measure) + measure(schema) + countTools(body.tools, measure));
        // An output cap above the model's maximum is named as such, before the context check it would also fail.
        if (maxTokens !== undefined && model.max_output_tokens !== undefined && maxTokens > model.max_output_tokens) {
          throw new ApiError('invalid_request', `${maxTokensParam} may be at most ${model.max_output_tokens} for this model.`, { param: maxTokensParam });
        }
        const window = model.context_window;
        // The bound settles the check when even it fits; else the exact count decides (and is named).
        const overflows = (tokens: number) => window !== undefined && (tokens >= window || tokens + (maxTokens ?? 0) > window);
        if (overflows(prompt.bound) && overflows(prompt.exact)) {
          const promptTokens = prompt.exact;
          throw new ApiError(
            'context_length_exceeded',
            `This model's context window is ${window} tokens; the messages take ${promptTokens}` +
              (maxTokens ? ` and ${maxTokensParam} asks for ${maxTokens}` : '') +
              '.',
            // The prompt alone fits: the output cap is what to change.
            { param: promptTokens < window! ? maxTokensParam : 'messages' },
          );
        }
        // The most the call can produce: max_tokens, else the model's maximum, else what the context
        // leaves (sent upstream as max_tokens: from the exact count, so as not to cut the answer short).
        const maxOut = maxTokens ?? model.max_output_tokens ?? (window === undefined ? 4096 : Math.max(1, window - prompt.exact));
        return { prompt, maxOut };
      },
      // The bound's hold, or the exact count's when the wallet refuses that (`tighten`).
      estimate: (model, { prompt, maxOut }) => Math.ceil(priceOfTokens(model.pricing, prompt.known, maxOut * (body.n ?? 1))),
      tokens: ({ prompt, maxOut }) => prompt.known + maxOut * (body.n ?? 1),
      tighten: ({ prompt }) => prompt.tighten(),
    });
    const { model, payer } = call;
    const { prompt, maxOut } = call.checked;

    const request: ChatRequest = { messages };
    copyDefined(body, request, PASSED_THROUGH);
    if (body.stop !== undefined) request.stop = typeof body.stop === 'string' ? [body.stop] : body.stop;
    if (format !== undefined) request.response_format = format;
    // Upstreams see these per account, never as the client wrote them (see opaqueId).
    if (body.safety_identifier !== undefined) request.safety_identifier = this.deps.opaqueId(payer.walletId, body.safety_identifier);
    if (body.user !== undefined) request.user = this.deps.opaqueId(payer.walletId, body.user);
    if (body.prompt_cache_key !== undefined) request.prompt_cache_key = this.deps.opaqueId(payer.walletId, body.prompt_cache_key);
    request.max_tokens = maxOut;
    const endUser = body.safety_identifier ?? body.user;
    return {
      ...(endUser !== undefined ? { endUser } : {}),
      id: `chatcmpl-${randomUUID().replaceAll('-', '')}`,
      created: Math.floor(this.deps.now() / 1000),
      model,
      call,
      request,
      prompt,
      routes: this.deps.resolveRoutes(model),
    };
  }

  async complete(prep: PreparedChat, signal: CancelSignal): Promise<ChatCompletion> {
    let served: { result: { choices: ChatChoice[]; usage: TokenUsage | null }; route: ResolvedRoute };
    try {
      served = await this.deps.router.complete(prep.routes, prep.request, signal);
    } catch (err) {
      await this.release(prep, null, unservedStatus(err, signal));
      throw toApiError(err);
    }
    const usage = this.billable(prep, served.result.usage, () => ({
      prompt_tokens: prep.prompt.exact,
      completion_tokens: served.result.choices.reduce((s, c) => s + countText(c.message.content ?? '') + countTools(c.message.tool_calls), 0),
    }));
    // The answer does not wait for the debit (unless wallet writes are durable); any later read of the wallet does.
    await prep.call.settle(this.settleFacts(prep, served.route, usage, 'ok'), { answer: true });
    return {
      id: prep.id,
      object: 'chat.completion',
      created: prep.created,
      model: prep.model._id,
      choices: served.result.choices.map((c) => {
        const choice: AnswerChoice = {
          index: c.index,
          message: { role: 'assistant', content: c.message.content, refusal: null },
          logprobs: c.logprobs ?? null,
          finish_reason: c.finish_reason,
        };
        if (c.message.tool_calls !== undefined) choice.message.tool_calls = c.message.tool_calls;
        return choice;
      }),
      usage: usageObject(usage),
    };
  }

  /**
   * Opens the upstream stream (failing over until a route delivers its first chunk: until then
   * nothing reached the client, and an error here is an ordinary HTTP error). The returned
   * generator yields OpenAI chunks; whatever ends it (completion, upstream failure, the client
   * leaving) settles the call exactly once, billing what was generated.
   */
  async openStream(prep: PreparedChat, signal: CancelSignal, includeUsage: boolean): Promise<ChatStream> {
    let opened: { route: ResolvedRoute; first: ChatChunk | null; rest: AsyncIterable<ChatChunk> };
    try {
      opened = await this.deps.router.stream(prep.routes, prep.request, signal);
    } catch (err) {
      await this.release(prep, null, unservedStatus(err, signal));
      throw toApiError(err);
    }
    return { chunks: this.relay(prep, opened, signal, includeUsage) };
  }

  private async *relay(
    prep: PreparedChat,
    opened: { route: ResolvedRoute; first: ChatChunk | null; rest: AsyncIterable<ChatChunk> },
    signal: CancelSignal,
    includeUsage: boolean,
  ): AsyncGenerator<Record<string, unknown>> {
    const base = { id: prep.id, object: 'chat.completion.chunk', created: prep.created, model: prep.model._id };
    // Text received, kept to count with the tokenizer only if the upstream reports no usage (or the
    // stream ends early): counting every chunk as it passes cost more than the rest of the relay.
    const received: string[] = [];
    let reported: TokenUsage | null = null;
    let status: UsageFacts['status'] = 'ok';
    let failure: unknown = null;
    const roleSent = new Set<number>();
    try {
      const chunks = (async function* () {
        if (opened.first) yield opened.first;
        yield* opened.rest;
      })();
      for await (const chunk of chunks) {
        if (chunk.usage) reported = chunk.usage;
        if (chunk.choices.length === 0) continue;
        const choices = chunk.choices.map((c) => {
          if (c.delta.content) received.push(c.delta.content);
          const delta: Record<string, unknown> = {};
          // The spec: the first chunk of each choice carries delta.role.
          if (!roleSent.has(c.index)) {
            roleSent.add(c.index);
            delta.role = 'assistant';
          }
          if (c.delta.content) delta.content = c.delta.content;
          if (c.delta.tool_calls) {
            delta.tool_calls = c.delta.tool_calls;
            for (const t of c.delta.tool_calls) received.push(t.function.name ?? '', t.function.arguments ?? '');
          }
          return c.logprobs
            ? { index: c.index, delta, logprobs: c.logprobs, finish_reason: c.finish_reason ?? null }
            : { index: c.index, delta, finish_reason: c.finish_reason ?? null };
        });
        yield { ...base, choices };
      }
    } catch (err) {
      failure = err;
      status = signal.aborted ? 'client_closed' : 'upstream_failed';
    } finally {
      if (signal.aborted && status === 'ok') status = 'client_closed';
      // Upstream usage counts only when the stream completed; otherwise bill what was received.
      const usage = this.billable(prep, status === 'ok' ? reported : null, () => ({
        prompt_tokens: prep.prompt.exact,
        completion_tokens: countText(received.join('')),
      }));
      await this.settle(prep, opened.route, usage, status);
      if (status === 'ok' && includeUsage) {
        yield { ...base, choices: [], usage: usageObject(usage) };
      }
    }
    if (failure && !signal.aborted) throw toApiError(failure);
  }

  /**
   * Upstream usage (validated by the provider) when within the hold; else our own count with the tokenizer (run
   * only then). settle() caps the cost at the hold either way.
   */
  private billable(prep: PreparedChat, reported: TokenUsage | null, count: () => TokenUsage): TokenUsage {
    const withinHold = (u: TokenUsage) => priceOfTokens(prep.model.pricing, u.prompt_tokens, u.completion_tokens, u.cached_tokens) <= prep.call.limitMicrocents;
    return reported && withinHold(reported) ? reported : count();
  }

  private async settle(prep: PreparedChat, route: ResolvedRoute, usage: TokenUsage, status: UsageFacts['status']): Promise<void> {
    await prep.call.settle(this.settleFacts(prep, route, usage, status));
  }

  private settleFacts(prep: PreparedChat, route: ResolvedRoute, usage: TokenUsage, status: UsageFacts['status']): CallFacts {
    const cost = Math.min(prep.call.limitMicrocents, priceOfTokens(prep.model.pricing, usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens));
    return {
      route: route.id,
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      costMicrocents: cost,
      status,
      cachedTokens: usage.cached_tokens,
      endUser: prep.endUser,
    };
  }

  private async release(prep: PreparedChat, route: ResolvedRoute | null, status: UsageFacts['status']): Promise<void> {
    await prep.call.release(status, {
      route: route?.id ?? null,
      promptTokens: 0,
      completionTokens: 0,
      ...(prep.endUser !== undefined ? { endUser: prep.endUser } : {}),
    });
  }
}
