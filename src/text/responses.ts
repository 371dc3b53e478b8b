// OpenAI's Responses API (POST /v1/responses) as a translation onto chat: the request becomes a
// chat body (served by the same routes, failover and Meter), the completion or its chunks become a
// response object or the Responses stream's typed events. Text and function tools only; stateless.
//   input: a string (one user message) or items: messages ({role, content: string | input_text /
//     output_text parts}), `function_call` and `function_call_output` items; `instructions` → a
//     system message first; max_output_tokens → max_tokens; text.format → response_format;
//     reasoning.effort → reasoning_effort; tools {type: function, name, ...} → chat tools.
//   store: true and previous_response_id are refused: nothing is kept between calls. `metadata` is
//   echoed in the answer; `include` (extra output) nothing but reasoning.encrypted_content (there
//   is none), `truncation` only 'disabled'.
import { randomUUID } from 'node:crypto';
import { ApiError, echo } from '../errors.ts';
import type { ChatBody, ChatCompletion } from './chat.ts';
import { copyDefined, type ToolCall } from '../providers/types.ts';

/** The request as the route's schema lets it in. */
export interface ResponsesBody {
  model: string;
  input: string | Record<string, unknown>[];
  instructions?: string;
  max_output_tokens?: number;
  temperature?: number;
  top_p?: number;
  stream?: boolean;
  store?: boolean;
  previous_response_id?: string;
  tools?: { type: 'function'; name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null }[];
  tool_choice?: 'none' | 'auto' | 'required' | { type: 'function'; name: string };
  parallel_tool_calls?: boolean;
  text?: {
    format?:
      | { type: 'text' }
      | { type: 'json_object' }
      | { type: 'json_schema'; name: string; schema?: Record<string, unknown>; description?: string; strict?: boolean | null };
  };
  reasoning?: { effort?: ChatBody['reasoning_effort'] };
  user?: string;
  safety_identifier?: string;
  prompt_cache_key?: string;
  metadata?: Record<string, string>;
  include?: string[];
  truncation?: 'disabled' | 'auto';
}

type Message = ChatBody['messages'][number];

function partsText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw new ApiError('invalid_request', `${at}.content must be a string or a list of text parts.`, { param: `${at}.content` });
  return content
    .map((p: unknown, j) => {
      const part = p as Record<string, unknown>;
      if ((part?.type !== 'input_text' && part?.type !== 'output_text') || typeof part.text !== 'string') {
        throw new ApiError('invalid_request', `Only text parts are supported; ${at}.content.${j} is of type '${echo(part?.type)}'.`, {
          param: `${at}.content.${j}.type`,
        });
      }
      return part.text;
    })
    .join('');
}

function str(item: Record<string, unknown>, key: string, at: string): string {
  const v = item[key];
  if (typeof v !== 'string') throw new ApiError('missing_input', `Missing required field '${at}.${key}'.`, { param: `${at}.${key}` });
  return v;
}

/**
 * The input items as chat messages: function calls join the assistant turn just before them (its
 * text, or calls before), as the output items of one response do.
 */
function inputMessages(input: ResponsesBody['input']): Message[] {
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const out: Message[] = [];
  input.forEach((item, i) => {
    const at = `input.${i}`;
    const type = item.type ?? 'message';
    if (type === 'message') {
      const role = typeof item.role === 'string' ? item.role : '';
      out.push({ role: role === 'developer' ? 'system' : role, content: partsText(item.content, at) });
    } else if (type === 'function_call') {
      const call: ToolCall = {
        id: str(item, 'call_id', at),
        type: 'function',
        function: { name: str(item, 'name', at), arguments: str(item, 'arguments', at) },
      };
      const last = out[out.length - 1];
      if (last && last.role === 'assistant') (last.tool_calls ??= []).push(call);
      else out.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (type === 'function_call_output') {
      out.push({ role: 'tool', tool_call_id: str(item, 'call_id', at), content: str(item, 'output', at) });
    } else if (type === 'item_reference') {
      // What the AI SDK sends for its earlier answers unless told store: false.
      throw new ApiError(
        'invalid_request',
        `${at} is a reference to a stored item, and responses are not kept: send the items themselves (the AI SDK does with providerOptions: { openai: { store: false } }).`,
        { param: `${at}.type` },
      );
    } else {
      throw new ApiError('invalid_request', `${at}.type '${echo(type)}' is not supported; use message, function_call or function_call_output.`, {
        param: `${at}.type`,
      });
    }
  });
  return out;
}

/** The fields a Responses body shares with a chat body, name and meaning, passed on when set. */
const SAME_IN_CHAT = [
  'temperature',
  'top_p',
  'parallel_tool_calls',
  'user',
  'safety_identifier',
  'prompt_cache_key',
] as const satisfies readonly (keyof ResponsesBody & keyof ChatBody)[];

export function toChatBody(body: ResponsesBody): ChatBody {
  if (body.store === true)
    throw new ApiError(
      'invalid_request',
      'store: true is not supported: responses are not kept; send store: false (or omit it) and the whole conversation in input.',
      { param: 'store' },
    );
  if (body.previous_response_id !== undefined) {
    throw new ApiError('invalid_request', 'previous_response_id is not supported: responses are not kept; send the whole conversation in input.', {
      param: 'previous_response_id',
    });
  }
  // Encrypted reasoning (what a stateless client asks for to carry reasoning between calls, the AI
  // SDK with store: false on a reasoning model) is none: reasoning is never relayed.
  const extra = (body.include ?? []).findIndex((v) => v !== 'reasoning.encrypted_content');
  if (extra >= 0) {
    throw new ApiError('invalid_request', `include '${echo(body.include![extra])}' is not supported: the output is text and function calls only.`, {
      param: `include.${extra}`,
    });
  }
  if (body.truncation === 'auto') {
    throw new ApiError(
      'invalid_request',
      "truncation 'auto' is not supported: an input longer than the context window is refused; send truncation: 'disabled' (or omit it).",
      { param: 'truncation' },
    );
  }
  const messages = inputMessages(body.input);
  // Empty instructions and an empty tool list (LlamaIndex sends both by default) are none.
  if (body.instructions) messages.unshift({ role: 'system', content: body.instructions });
  const chat: ChatBody = { model: body.model, messages };
  if (body.max_output_tokens !== undefined) chat.max_tokens = body.max_output_tokens;
  copyDefined<ChatBody, (typeof SAME_IN_CHAT)[number]>(body, chat, SAME_IN_CHAT);
  if (body.reasoning?.effort !== undefined) chat.reasoning_effort = body.reasoning.effort;
  if (body.tools !== undefined && body.tools.length > 0) {
    chat.tools = body.tools.map(({ name, description, parameters, strict }) => ({
      type: 'function',
      function: {
        name,
        ...(description !== undefined ? { description } : {}),
        ...(parameters !== undefined ? { parameters } : {}),
        ...(strict !== undefined ? { strict } : {}),
      },
    }));
  }
  const tc = body.tool_choice;
  if (tc !== undefined) chat.tool_choice = typeof tc === 'string' ? tc : { type: 'function', function: { name: tc.name } };
  const f = body.text?.format;
  if (f !== undefined) {
    if (f.type === 'json_schema') {
      const { type: _type, ...schema } = f;
      chat.response_format = { type: 'json_schema', json_schema: schema };
    } else chat.response_format = { type: f.type };
  }
  return chat;
}

export const newResponseId = (): string => `resp_${randomUUID().replaceAll('-', '')}`;

interface Usage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number; cache_write_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

export function responsesUsage(u: ChatCompletion['usage']): Usage {
  return {
    input_tokens: u.prompt_tokens,
    // Cache writes are not reported on the chat path (OpenAI's caching writes nothing it bills apart): 0.
    input_tokens_details: { cached_tokens: u.prompt_tokens_details?.cached_tokens ?? 0, cache_write_tokens: 0 },
    output_tokens: u.completion_tokens,
    output_tokens_details: { reasoning_tokens: u.completion_tokens_details?.reasoning_tokens ?? 0 },
    total_tokens: u.total_tokens,
  };
}

export const messageItem = (id: string, text: string, status: 'in_progress' | 'completed') => ({
  type: 'message',
  id,
  status,
  role: 'assistant',
  content: status === 'completed' ? [outputText(text)] : [],
});

/** OpenAI's OutputTextContent: `annotations` and `logprobs` required (none are given: empty). */
export const outputText = (text: string) => ({ type: 'output_text', text, annotations: [], logprobs: [] });

/** A request's function tool as OpenAI's FunctionTool echoes it: `parameters` and `strict` required, nullable. */
const echoedTool = (t: NonNullable<ResponsesBody['tools']>[number]) => ({
  type: 'function' as const,
  name: t.name,
  description: t.description ?? null,
  parameters: t.parameters ?? null,
  strict: t.strict ?? null,
});

export const functionCallItem = (call: ToolCall, status: 'in_progress' | 'completed') => ({
  type: 'function_call',
  id: `fc_${call.id}`,
  call_id: call.id,
  name: call.function.name,
  arguments: call.function.arguments,
  status,
});

export interface ResponseObject extends Record<string, unknown> {
  id: string;
  object: 'response';
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
}

/** The response object around `output` (in progress, or final with status and usage). */
export function responseObject(
  id: string,
  createdAt: number,
  model: string,
  body: ResponsesBody,
  output: unknown[],
  final?: { finish: string; usage: ChatCompletion['usage'] },
): ResponseObject {
  const incomplete = final?.finish === 'length';
  return {
    id,
    object: 'response' as const,
    created_at: createdAt,
    status: (final === undefined ? 'in_progress' : incomplete ? 'incomplete' : 'completed') as ResponseObject['status'],
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    model,
    output,
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    store: false,
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    text: { format: body.text?.format ?? { type: 'text' } },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools?.map(echoedTool) ?? [],
    truncation: 'disabled',
    // Absent until the final object: the schema's `usage` is optional and never null.
    ...(final === undefined ? {} : { usage: responsesUsage(final.usage) }),
    metadata: body.metadata ?? {},
  };
}

/**
 * The response object of a stream the upstream broke mid-way (`response.failed`): `failed`, with the
 * error's message (what the `error` event before it said) under the code of OpenAI's own list that
 * fits (`rate_limit_exceeded`, else `server_error`: the list has no other for a failed upstream).
 * Its output is what the deltas already carried; the object lists none, as the response never completed.
 */
export function failedResponse(id: string, createdAt: number, model: string, body: ResponsesBody, error: { code: string; message: string }): ResponseObject {
  const code = error.code === 'rate_limit_exceeded' ? error.code : 'server_error';
  return { ...responseObject(id, createdAt, model, body, []), status: 'failed', error: { code, message: error.message } };
}

/** A completion as a response object: the text as one message item, then each tool call. */
export function completionResponse(id: string, body: ResponsesBody, c: ChatCompletion): ResponseObject {
  const choice = c.choices[0]!;
  const output: unknown[] = [];
  if (choice.message.content) output.push(messageItem(`msg_${id.slice(5)}`, choice.message.content, 'completed'));
  for (const call of choice.message.tool_calls ?? []) output.push(functionCallItem(call, 'completed'));
  return responseObject(id, c.created, c.model, body, output, { finish: choice.finish_reason, usage: c.usage });
}
