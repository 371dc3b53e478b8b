// The chat capability's port: OpenAI-shaped requests, answers and stream chunks (tool calls,
// response formats, logprobs, usage), whatever the upstream speaks; a provider translates.
import type { CancelSignal } from '../cancel.ts';
import type { Refusal, ResolvedRoute } from '../upstream.ts';

/** A function call the model asked for (OpenAI's shape; `arguments` is JSON text as the model wrote it). */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** A function the model may call: OpenAI's tool definition, `parameters` a JSON schema. */
export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/**
 * A message as the gateway passes it on. Only models with tool calling see `tool` messages,
 * `tool_calls` and a null `content` (an assistant turn that only calls tools).
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  /** On a `tool` message: the call it answers. */
  tool_call_id?: string;
}

/** A streamed piece of a tool call: the first carries id, type and name; later ones more arguments. */
export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

/** OpenAI's `response_format`: plain text, any JSON object, or JSON following a schema. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name: string; description?: string; schema?: Record<string, unknown>; strict?: boolean | null } };

/** OpenAI's `reasoning_effort`: how much a reasoning model thinks before it answers. */
export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
export const REASONING_EFFORTS: readonly ReasoningEffort[] = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'];

export interface ChatRequest {
  messages: ChatMessage[];
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  stop?: string[];
  n?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  seed?: number;
  response_format?: ResponseFormat;
  reasoning_effort?: ReasoningEffort;
  verbosity?: 'low' | 'medium' | 'high';
  /** Per output token, its log probability (and the `top_logprobs` likeliest alternatives, 0..20). */
  logprobs?: boolean;
  top_logprobs?: number;
  /** Token id (of the upstream model's tokenizer, as a decimal string) → bias, -100..100. */
  logit_bias?: Record<string, number>;
  /**
   * The client's end-user and cache-routing hints (OpenAI's `safety_identifier`, deprecated
   * `user`, `prompt_cache_key`), already made opaque by the gateway: never the client's own value.
   */
  safety_identifier?: string;
  user?: string;
  prompt_cache_key?: string;
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
}

/**
 * Chat parameters that travel unchanged from the client's body to the request and on to an
 * OpenAI-compatible upstream (routes' schemas checked them; providers that differ translate).
 */
export const PASSED_THROUGH = [
  'temperature',
  'top_p',
  'n',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'logprobs',
  'top_logprobs',
  'reasoning_effort',
  'verbosity',
  'logit_bias',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
] as const satisfies readonly (keyof ChatRequest)[];

/** Copies the fields `keys` names that are set in `from` onto `to`. */
export function copyDefined<T extends object, K extends keyof T>(from: Pick<T, K>, to: T, keys: readonly K[]): void {
  for (const k of keys) if (from[k] !== undefined) to[k] = from[k];
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  /** Of completion_tokens, how many the model spent reasoning (hidden), when the upstream says. */
  reasoning_tokens?: number;
  /** Of prompt_tokens, how many the upstream read from its prompt cache, when it says. */
  cached_tokens?: number;
}

/** One output token's log probability, in OpenAI's shape (`bytes`: its UTF-8 bytes, or null). */
export interface TokenLogprob {
  token: string;
  logprob: number;
  bytes: number[] | null;
}

/** OpenAI's `choices[].logprobs` (answers) and its per-chunk part (streams). */
export interface ChoiceLogprobs {
  content: (TokenLogprob & { top_logprobs: TokenLogprob[] })[] | null;
  /** Required by OpenAI's schema beside `content`; refusals are never relayed, so null. */
  refusal: null;
}

export interface ChatChoice {
  index: number;
  /** content is null only when the model answered with tool calls alone. */
  message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };
  finish_reason: string;
  /** Present when the request asked for logprobs: what the upstream gave, or null. */
  logprobs?: ChoiceLogprobs | null;
}

export interface ChatResult {
  choices: ChatChoice[];
  /** As reported by the upstream; null when it reported none (the caller counts with its tokenizer). */
  usage: TokenUsage | null;
}

export interface ChatChunk {
  choices: {
    index: number;
    delta: { role?: 'assistant'; content?: string; tool_calls?: ToolCallDelta[] };
    finish_reason?: string | null;
    logprobs?: ChoiceLogprobs;
  }[];
  /** Present on the chunk that carries the upstream's final usage, if any. */
  usage?: TokenUsage;
}

export interface ChatCapability {
  /**
   * Whether this provider can honour `req` as asked; the first parameter it cannot, if any. The
   * router asks before it tries a route, and passes over a route that refuses (no call, no health
   * effect): the request may suit the model's next route.
   */
  refuses?(req: ChatRequest): Refusal | undefined;
  complete(route: ResolvedRoute, req: ChatRequest, signal: CancelSignal): Promise<ChatResult>;
  /**
   * Opens a stream. Resolves once the upstream accepted the request (2xx and headers); the iterator
   * then yields chunks as they arrive, and throws UpstreamError on a mid-stream failure.
   * Implementations ask the upstream for usage on streams where the protocol allows it.
   */
  stream(route: ResolvedRoute, req: ChatRequest, signal: CancelSignal): Promise<AsyncIterable<ChatChunk>>;
}
