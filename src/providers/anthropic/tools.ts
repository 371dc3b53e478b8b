// OpenAI's tool calling in Anthropic's Messages API terms, both ways.
//
// Request: `tools[].function` {name, description, parameters} → `tools[]` {name, description,
// input_schema} (`strict` has no equivalent and is dropped); `tool_choice` auto → {type: auto},
// required → {type: any}, none → {type: none}, a named function → {type: tool, name};
// `parallel_tool_calls: false` → `disable_parallel_tool_use`. An assistant message's `tool_calls`
// become `tool_use` blocks after its text (arguments parsed: JSON text that is not an object is
// refused, since Anthropic takes an object); a `tool` message becomes a user turn's `tool_result`
// block (consecutive ones merge into one turn, as Anthropic wants all results of a turn together).
// Answer: `tool_use` blocks → `tool_calls` (input as JSON text). Stream: a tool_use block's start →
// a tool-call delta with id and name; its `input_json_delta`s → argument deltas.
import { isObject, protocolError, type Json } from '../validate.ts';
import type { ChatMessage, ChatRequest, Refusal, ToolCall, ToolCallDelta } from '../types.ts';

export interface Turn {
  role: 'user' | 'assistant';
  content: string | Json[];
}

function parsedArguments(args: string): Json | null {
  try {
    const v: unknown = JSON.parse(args === '' ? '{}' : args);
    return isObject(v) ? v : null;
  } catch {
    return null;
  }
}

/** A tool call whose arguments Anthropic cannot take (not a JSON object), if any. */
export function toolArgumentsRefusal(req: ChatRequest): Refusal | undefined {
  for (const [i, m] of req.messages.entries()) {
    const bad = m.tool_calls?.findIndex((t) => parsedArguments(t.function.arguments) === null) ?? -1;
    if (bad >= 0) return { param: `messages.${i}.tool_calls.${bad}.function.arguments`, message: 'tool call arguments must be a JSON object for this model' };
  }
  return undefined;
}

export function toTurn(m: ChatMessage): Turn {
  if (m.role === 'tool') return { role: 'user', content: [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: m.content ?? '' }] };
  const role = m.role === 'assistant' ? 'assistant' : 'user';
  if (m.tool_calls === undefined) return { role, content: m.content ?? '' };
  const blocks: Json[] = m.content ? [{ type: 'text', text: m.content }] : [];
  for (const t of m.tool_calls) blocks.push({ type: 'tool_use', id: t.id, name: t.function.name, input: parsedArguments(t.function.arguments) ?? {} });
  return { role, content: blocks };
}

const asBlocks = (c: string | Json[]): Json[] => (typeof c === 'string' ? (c === '' ? [] : [{ type: 'text', text: c }]) : c);

/** Two consecutive turns of one role as one: texts joined by a blank line, blocks in order. */
export function mergeContent(a: string | Json[], b: string | Json[]): string | Json[] {
  if (typeof a === 'string' && typeof b === 'string') return `${a}\n\n${b}`;
  return [...asBlocks(a), ...asBlocks(b)];
}

/** The request body's `tools` and `tool_choice`, or nothing when the request offers no tools. */
export function anthropicTools(req: ChatRequest): Json {
  if (req.tools === undefined) return {};
  const out: Json = {
    tools: req.tools.map((t) => ({
      name: t.function.name,
      ...(t.function.description !== undefined ? { description: t.function.description } : {}),
      input_schema: t.function.parameters ?? { type: 'object', properties: {} },
    })),
  };
  const c = req.tool_choice;
  const choice: Json =
    c === undefined || c === 'auto'
      ? { type: 'auto' }
      : c === 'required'
        ? { type: 'any' }
        : c === 'none'
          ? { type: 'none' }
          : { type: 'tool', name: c.function.name };
  if (req.parallel_tool_calls === false && choice.type !== 'none') choice.disable_parallel_tool_use = true;
  if (c !== undefined || choice.disable_parallel_tool_use) out.tool_choice = choice;
  return out;
}

/** The answer's tool_use blocks as OpenAI tool calls; undefined when there are none. */
export function toolCallsOf(routeId: string, content: Json[]): ToolCall[] | undefined {
  const calls: ToolCall[] = [];
  for (const block of content) {
    if (block.type !== 'tool_use') continue;
    if (typeof block.id !== 'string' || typeof block.name !== 'string' || !isObject(block.input)) throw protocolError(routeId, 'a tool_use block is malformed');
    calls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: JSON.stringify(block.input) } });
  }
  return calls.length > 0 ? calls : undefined;
}

/**
 * A stream event's tool-call delta, if it is one: a tool_use block's start (id and name) or an
 * input_json_delta of one (`blocks` maps content-block indexes to tool-call indexes).
 */
export function toolCallDelta(routeId: string, event: Json, part: Json, blocks: Map<number, number>): ToolCallDelta | null {
  const at = typeof event.index === 'number' ? event.index : -1;
  if (part.type === 'tool_use') {
    if (typeof part.id !== 'string' || typeof part.name !== 'string') throw protocolError(routeId, 'a tool_use block is malformed');
    const index = blocks.size;
    blocks.set(at, index);
    return { index, id: part.id, type: 'function', function: { name: part.name, arguments: '' } };
  }
  if (part.type === 'input_json_delta') {
    const index = blocks.get(at);
    if (index === undefined) return null; // not of a tool_use block we announced: nothing to relay
    if (typeof part.partial_json !== 'string') throw protocolError(routeId, 'an input_json_delta is malformed');
    return { index, function: { arguments: part.partial_json } };
  }
  return null;
}
