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
// Anthropic's `{type: 'error', error: {type, message}}`. Programmable per request through
// FakeBehaviour (see fake-server.ts); `errorAfterChunks` sends an `event: error` (overloaded).
import { FakeServer, sendAnswer, sendJson, sendStream, simulate, type Exchange } from './fake-server.ts';

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
    if (typeof m.content !== 'string' || m.content === '') return `messages.${i}: text content blocks must be non-empty`;
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
  const all = body.system ? [{ role: 'system', content: body.system as string }, ...body.messages] : body.messages;
  const sim = simulate(all, x.behaviour.reply, body.max_tokens, body.stop_sequences);
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
