// A fake Anthropic Messages API on loopback, speaking the real wire format:
//   POST /v1/messages — JSON, or SSE with `stream: true` in Anthropic's events (message_start,
//     content_block_start, ping, content_block_delta per word, content_block_stop, message_delta,
//     message_stop).
// It enforces what the real API enforces and a translation could get wrong: `x-api-key` (401),
// `anthropic-version` (400), `max_tokens` required, roles only user/assistant, turns alternating
// and starting with a user turn, non-empty content, `system` only at the top level, and extended
// thinking's rules (budget 1,024 or more and under max_tokens; temperature only 1, top_p 0.95 or
// more, no prefilled final assistant turn beside it). With thinking it answers a thinking block
// (with its signature) before the text, its tokens counted in output_tokens. Errors use
// Anthropic's `{type: 'error', error: {type, message}}`. Offered `tools`, it answers a tool_use block (streamed as
// input_json_delta pieces) as test/fakes/tools.ts plays it; a tool_result must answer the turn before's tool_use. Programmable per request through
// FakeBehaviour (see fake-server.ts); `errorAfterChunks` sends an `event: error` (overloaded).
import { FakeServer, sendAnswer, sendJson, sendStream, simulate, words, type Exchange } from './fake-server.ts';
import { afterTool, fakeToolCall, textOf, type FakeToolCall } from './tools.ts';

export { FakeServer, simulate, words, type FakeBehaviour, type RecordedRequest } from './fake-server.ts';

export interface AnthropicUpstreamOptions {
  /** The key `x-api-key` must carry (default 'sk-ant-fake'). */
  apiKey?: string;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  529: 'overloaded_error',
};

function anthropicError(x: Exchange, status: number, message: string): void {
  sendJson(x.res, status, { type: 'error', error: { type: ERROR_TYPES[status] ?? 'api_error', message } });
}

/** What the real API would refuse in a request body, or null. */
export function invalidMessagesBody(body: any): string | null {
  if (typeof body !== 'object' || body === null) return 'body must be a JSON object';
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (body.system !== undefined && typeof body.system !== 'string') return 'system: Input should be a valid string';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  for (const [i, m] of (body.messages as any[]).entries()) {
    if (m.role !== 'user' && m.role !== 'assistant') {
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    }
    const contentProblem = invalidContent(m, i, body.messages[i - 1]);
    if (contentProblem) return contentProblem;
    const want = i % 2 === 0 ? 'user' : 'assistant';
    if (m.role !== want) return 'messages: roles must alternate between "user" and "assistant", starting with "user"';
  }
  if (body.temperature !== undefined && !(body.temperature >= 0 && body.temperature <= 1)) {
    return 'temperature: Input should be less than or equal to 1';
  }
  if (body.stop_sequences !== undefined && !Array.isArray(body.stop_sequences)) return 'stop_sequences: Input should be a valid list';
  if (body.metadata !== undefined && (typeof body.metadata?.user_id !== 'string' || body.metadata.user_id.length > 256)) {
    return 'metadata.user_id: String should have at most 256 characters';
  }
  if (body.tools !== undefined) {
    if (
      !Array.isArray(body.tools) ||
      !body.tools.every(
        (t: any) =>
          typeof t?.name === 'string' && typeof t.input_schema === 'object' && Object.keys(t).every((k) => ['name', 'description', 'input_schema'].includes(k)),
      )
    ) {
      return 'tools: each tool takes name, description and input_schema';
    }
  }
  if (body.tool_choice !== undefined && !['auto', 'any', 'none', 'tool'].includes(body.tool_choice?.type))
    return 'tool_choice: Input tag does not match any of the expected tags';
  if (body.tool_choice?.type === 'tool' && !body.tools?.some((t: any) => t.name === body.tool_choice.name)) return 'tool_choice.name: no such tool';
  if (body.thinking !== undefined) {
    const t = body.thinking;
    if (t?.type !== 'enabled' || !Number.isInteger(t.budget_tokens)) return 'thinking: Input tag does not match any of the expected tags';
    if (t.budget_tokens < 1024) return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    if (body.max_tokens <= t.budget_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
    if (body.temperature !== undefined && body.temperature !== 1) return '`temperature` may only be set to 1 when thinking is enabled';
    if (body.top_p !== undefined && body.top_p < 0.95) return '`top_p` must be greater than or equal to 0.95 or unset when thinking is enabled';
    if (body.messages.at(-1).role === 'assistant') {
      return 'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.';
    }
  }
  return null;
}

/** A message's content as the real API checks it: non-empty text, or blocks; a tool_result answers a tool_use of the turn before. */
function invalidContent(m: any, i: number, previous: any): string | null {
  if (typeof m.content === 'string') return m.content === '' ? `messages.${i}: text content blocks must be non-empty` : null;
  if (!Array.isArray(m.content) || m.content.length === 0) return `messages.${i}: content must be a string or a non-empty list of blocks`;
  for (const [j, b] of (m.content as any[]).entries()) {
    const at = `messages.${i}.content.${j}`;
    if (b?.type === 'text' && typeof b.text === 'string' && b.text !== '') continue;
    if (
      b?.type === 'tool_use' &&
      m.role === 'assistant' &&
      typeof b.id === 'string' &&
      typeof b.name === 'string' &&
      typeof b.input === 'object' &&
      b.input !== null &&
      !Array.isArray(b.input)
    )
      continue;
    if (b?.type === 'tool_result' && m.role === 'user' && typeof b.tool_use_id === 'string') {
      const asked = Array.isArray(previous?.content) && previous.content.some((p: any) => p.type === 'tool_use' && p.id === b.tool_use_id);
      if (!asked)
        return `${at}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
      continue;
    }
    return `${at}: invalid content block`;
  }
  return null;
}

/** What the fake "thinks" when thinking is on: counted as output tokens, as Anthropic bills it. */
export const FAKE_THINKING = ['Let', ' me', ' think', ' this', ' through.'];

export async function startAnthropicUpstream(opts: AnthropicUpstreamOptions = {}): Promise<FakeServer> {
  const apiKey = opts.apiKey ?? 'sk-ant-fake';
  return FakeServer.start(async (x) => {
    const { rec, behaviour } = x;
    if (rec.method !== 'POST' || rec.path !== '/v1/messages') return anthropicError(x, 404, 'not found');
    if (rec.headers['x-api-key'] !== apiKey) return anthropicError(x, 401, 'invalid x-api-key');
    if (rec.headers['anthropic-version'] !== '2023-06-01') return anthropicError(x, 400, 'anthropic-version: header is required');
    if (behaviour.status) return anthropicError(x, behaviour.status, behaviour.message ?? `fake failure ${behaviour.status}`);
    const invalid = invalidMessagesBody(rec.body);
    if (invalid) return anthropicError(x, 400, invalid);
    return messages(x, rec.body);
  });
}

async function messages(x: Exchange, body: any): Promise<void> {
  const texts = (body.messages as any[]).map((m) => ({ role: m.role, content: textOf(m.content) }));
  const all = body.system ? [{ role: 'system', content: body.system as string }, ...texts] : texts;
  const lastBlocks = Array.isArray(body.messages.at(-1).content) ? (body.messages.at(-1).content as any[]) : [];
  const result = lastBlocks.find((b) => b.type === 'tool_result');
  const lastUser = [...(body.messages as any[])]
    .reverse()
    .find((m) => m.role === 'user' && !(Array.isArray(m.content) && m.content.some((b: any) => b.type === 'tool_result')));
  const tool = fakeToolCall(
    (body.tools ?? []).map((t: any) => t.name),
    body.tool_choice?.type === 'none' ? 'none' : body.tool_choice,
    textOf(lastUser?.content),
    result !== undefined,
  );
  if (tool) return toolUse(x, body, all, tool);
  const sim = simulate(all, x.behaviour.reply ?? (result ? afterTool(textOf(result.content)) : undefined), body.max_tokens, body.stop_sequences);
  const stopReason = sim.finish === 'length' ? 'max_tokens' : sim.stopSequence ? 'stop_sequence' : 'end_turn';
  const thought = body.thinking ? FAKE_THINKING : [];
  const outputTokens = sim.completionTokens + thought.length;
  const usage = (x.behaviour.usage as Record<string, unknown> | undefined) ?? { input_tokens: sim.promptTokens, output_tokens: outputTokens };
  const message = { id: 'msg_fake', type: 'message', role: 'assistant', model: body.model };
  const thinkingBlock = { type: 'thinking', thinking: thought.join(''), signature: 'fake-signature' };
  if (!body.stream) {
    return sendAnswer(x, {
      ...message,
      content: [...(body.thinking ? [thinkingBlock] : []), { type: 'text', text: sim.text }],
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
  }
  const event = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const startUsage = x.behaviour.usage ? usage : { input_tokens: sim.promptTokens, output_tokens: 1 };
  const text = body.thinking ? 1 : 0; // the text block's index
  const frames = [
    event('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: startUsage } }),
    ...(body.thinking
      ? [
          event('content_block_start', { index: 0, content_block: { type: 'thinking', thinking: '', signature: '' } }),
          ...thought.map((thinking) => event('content_block_delta', { index: 0, delta: { type: 'thinking_delta', thinking } })),
          event('content_block_delta', { index: 0, delta: { type: 'signature_delta', signature: thinkingBlock.signature } }),
          event('content_block_stop', { index: 0 }),
        ]
      : []),
    event('content_block_start', { index: text, content_block: { type: 'text', text: '' } }),
    event('ping', {}),
    ...sim.pieces.map((piece) => event('content_block_delta', { index: text, delta: { type: 'text_delta', text: piece } })),
    event('content_block_stop', { index: text }),
    event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: x.behaviour.usage ? usage : { output_tokens: outputTokens } }),
    event('message_stop', {}),
  ];
  await sendStream(x, frames, event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }));
}

/** The fake model calling a tool: Anthropic's answer, or its stream (tool_use start, input_json_delta in two pieces). */
async function toolUse(x: Exchange, body: any, all: { role: string; content: string }[], tool: FakeToolCall): Promise<void> {
  const usage = { input_tokens: all.reduce((n, m) => n + words(m.content).length, 0), output_tokens: 5 };
  const message = { id: 'msg_fake', type: 'message', role: 'assistant', model: body.model };
  const block = { type: 'tool_use', id: tool.id, name: tool.name, input: JSON.parse(tool.arguments) };
  if (!body.stream) return sendAnswer(x, { ...message, content: [block], stop_reason: 'tool_use', stop_sequence: null, usage });
  const event = (name: string, data: Record<string, unknown>) => `event: ${name}\ndata: ${JSON.stringify({ type: name, ...data })}\n\n`;
  const half = Math.floor(tool.arguments.length / 2);
  await sendStream(
    x,
    [
      event('message_start', { message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } }),
      event('content_block_start', { index: 0, content_block: { ...block, input: {} } }),
      event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: tool.arguments.slice(0, half) } }),
      event('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: tool.arguments.slice(half) } }),
      event('content_block_stop', { index: 0 }),
      event('message_delta', { delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 5 } }),
      event('message_stop', {}),
    ],
    event('error', { error: { type: 'overloaded_error', message: 'Overloaded' } }),
  );
}
