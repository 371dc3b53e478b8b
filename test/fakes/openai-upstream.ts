// A fake OpenAI-compatible upstream on loopback, speaking the real wire format:
//   POST /v1/chat/completions — JSON, or SSE with `stream: true` (role chunk, one chunk per word,
//     the finish_reason chunk, the usage chunk when `stream_options.include_usage`, `[DONE]`);
//   POST /v1/embeddings — string, list, token-id list or lists input, `encoding_format` float|base64,
//     `dimensions`;
//   POST /v1/audio/transcriptions and /v1/audio/translations — see openai-audio-upstream.ts.
// Offered `tools`, it calls one as test/fakes/tools.ts plays it (answers and streamed deltas).
// With `logprobs` it sends each output token's entry (fakeLogprob), in answers and per chunk.
// It refuses (400) what OpenAI refuses among the passed-through parameters (invalidChatBody), and a
// `reasoning_effort` makes it spend FAKE_REASONING_TOKENS hidden tokens per choice, reported in
// usage.completion_tokens_details.reasoning_tokens as OpenAI does.
// With `apiKey` set it answers 401 unless `authorization: Bearer <apiKey>` came; with `models` set,
// 404 for any other model. Programmable per request through FakeBehaviour (see fake-server.ts).
//
//   const up = await startOpenAIUpstream({ apiKey: 'sk-up' });
//   up.next({ status: 503 }, { closeAfterChunks: 3 });   // the next two requests
//   ... route base_url = `${up.url}/v1` ...
//   up.requests[0].headers.authorization                  // 'Bearer sk-up'
import { FakeServer, sendAnswer, sendJson, sendStream, simulate, words, type Exchange } from './fake-server.ts';
import { REASONING_EFFORTS } from '../../src/providers/types.ts';
import { OPENAI_AUDIO_PATHS, openaiAudio } from './openai-audio-upstream.ts';
import { afterTool, fakeToolCall, textOf, type FakeToolCall } from './tools.ts';

export { FakeServer, simulate, words, type FakeBehaviour, type RecordedRequest } from './fake-server.ts';

export interface OpenAIUpstreamOptions {
  apiKey?: string;
  models?: string[];
  /** Embedding length when the request names no `dimensions` (default 8). */
  dimensions?: number;
}

const ERROR_TYPES: Record<number, [string, string]> = {
  400: ['invalid_request_error', 'invalid_request'],
  401: ['invalid_request_error', 'invalid_api_key'],
  403: ['permission_error', 'permission_denied'],
  404: ['invalid_request_error', 'model_not_found'],
  429: ['rate_limit_error', 'rate_limit_exceeded'],
};

function openaiError(x: Exchange, status: number, message: string): void {
  const [type, code] = ERROR_TYPES[status] ?? ['server_error', 'server_error'];
  sendJson(x.res, status, { error: { message, type, param: null, code } });
}

export async function startOpenAIUpstream(opts: OpenAIUpstreamOptions = {}): Promise<FakeServer> {
  return FakeServer.start(async (x) => {
    const { rec, behaviour } = x;
    if (rec.method !== 'POST') return openaiError(x, 405, 'method not allowed');
    if (opts.apiKey !== undefined && rec.headers.authorization !== `Bearer ${opts.apiKey}`) {
      return openaiError(x, 401, 'Incorrect API key provided.');
    }
    if (behaviour.status) return openaiError(x, behaviour.status, behaviour.message ?? `fake failure ${behaviour.status}`);
    if (OPENAI_AUDIO_PATHS.includes(rec.path)) return openaiAudio(x, (status, message) => openaiError(x, status, message), opts.models);
    const body = rec.body;
    if (typeof body !== 'object' || body === null || typeof body.model !== 'string') return openaiError(x, 400, 'model is required');
    if (opts.models && !opts.models.includes(body.model)) {
      return openaiError(x, 404, `The model \`${body.model}\` does not exist or you do not have access to it.`);
    }
    if (rec.path === '/v1/chat/completions') return chat(x, body);
    if (rec.path === '/v1/embeddings') return embeddings(x, body, opts.dimensions ?? 8);
    return openaiError(x, 404, 'not found');
  });
}

/** What OpenAI refuses among the parameters a gateway passes through, or null. */
export function invalidChatBody(body: any): string | null {
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages must be a non-empty array';
  if (body.reasoning_effort !== undefined && !REASONING_EFFORTS.includes(body.reasoning_effort)) {
    return `Invalid value: '${body.reasoning_effort}'. Supported values are: ${REASONING_EFFORTS.map((e) => `'${e}'`).join(', ')}.`;
  }
  if (body.verbosity !== undefined && !['low', 'medium', 'high'].includes(body.verbosity)) return `Invalid value: '${body.verbosity}' for verbosity.`;
  if (body.logit_bias !== undefined) {
    for (const [token, bias] of Object.entries(body.logit_bias)) {
      if (!/^[0-9]+$/.test(token) || typeof bias !== 'number' || bias < -100 || bias > 100) return `Invalid logit_bias entry '${token}'.`;
    }
  }
  if (body.top_logprobs !== undefined && body.logprobs !== true) return 'Using top_logprobs requires logprobs to be set to true.';
  if (body.top_logprobs !== undefined && !(Number.isInteger(body.top_logprobs) && body.top_logprobs >= 0 && body.top_logprobs <= 20)) {
    return 'Invalid top_logprobs: must be an integer between 0 and 20.';
  }
  for (const k of ['safety_identifier', 'user', 'prompt_cache_key']) {
    if (body[k] !== undefined && (typeof body[k] !== 'string' || body[k].length > 64))
      return `Invalid '${k}': string too long. Expected a string with maximum length 64.`;
  }
  return null;
}

/**
 * The logprobs entry of one output token, as OpenAI sends it: the i-th token of the reply has
 * log probability -(i+1)/100, and `top` alternatives (itself first, then `<token>~k`).
 */
export function fakeLogprob(token: string, i: number, top: number) {
  const entry = (t: string, lp: number) => ({ token: t, logprob: lp, bytes: [...Buffer.from(t, 'utf8')] });
  return { ...entry(token, -(i + 1) / 100), top_logprobs: Array.from({ length: top }, (_, k) => entry(k === 0 ? token : `${token}~${k}`, -(i + 1) / 100 - k)) };
}

/** Hidden reasoning tokens a fake reasoning model spends when reasoning_effort is set (and not none). */
export const FAKE_REASONING_TOKENS = 7;

async function chat(x: Exchange, body: any): Promise<void> {
  const invalid = invalidChatBody(body);
  if (invalid) return openaiError(x, 400, invalid);
  const messages = (body.messages as any[]).map((m) => ({ role: m.role, content: textOf(m.content) }));
  const last = messages.at(-1)!;
  const tool = fakeToolCall(
    (body.tools ?? []).map((t: any) => t.function.name),
    body.tool_choice,
    [...messages].reverse().find((m) => m.role === 'user')?.content ?? '',
    last.role === 'tool',
  );
  if (tool) return toolCallAnswer(x, body, messages, tool);
  const sim = simulate(messages, x.behaviour.reply ?? (last.role === 'tool' ? afterTool(last.content) : undefined), body.max_tokens, body.stop);
  const n: number = body.n ?? 1;
  const reasoning = body.reasoning_effort !== undefined && body.reasoning_effort !== 'none' ? FAKE_REASONING_TOKENS * n : 0;
  const usage = x.behaviour.usage ?? {
    prompt_tokens: sim.promptTokens,
    completion_tokens: sim.completionTokens * n + reasoning,
    total_tokens: sim.promptTokens + sim.completionTokens * n + reasoning,
    ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
  };
  const base = { id: 'chatcmpl-fake', created: 1_700_000_000, model: body.model };
  if (!body.stream) {
    const choices = Array.from({ length: n }, (_, index) => ({
      index,
      message: { role: 'assistant', content: sim.text },
      logprobs: body.logprobs === true ? { content: sim.pieces.map((t, i) => fakeLogprob(t, i, body.top_logprobs ?? 0)), refusal: null } : null,
      finish_reason: sim.finish,
    }));
    return sendAnswer(x, { ...base, object: 'chat.completion', choices, usage });
  }
  const withUsage = body.stream_options?.include_usage === true;
  const frame = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices, ...(withUsage ? { usage: null } : {}), ...extra })}\n\n`;
  const each = (f: (index: number) => unknown) => Array.from({ length: n }, (_, index) => f(index));
  const frames = [
    frame(each((index) => ({ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }))),
    ...sim.pieces.map((content, i) =>
      frame(
        each((index) => ({
          index,
          delta: { content },
          logprobs: body.logprobs === true ? { content: [fakeLogprob(content, i, body.top_logprobs ?? 0)], refusal: null } : null,
          finish_reason: null,
        })),
      ),
    ),
    frame(each((index) => ({ index, delta: {}, logprobs: null, finish_reason: sim.finish }))),
  ];
  if (withUsage) frames.push(frame([], { usage }));
  frames.push('data: [DONE]\n\n');
  await sendStream(x, frames, `data: ${JSON.stringify({ error: { message: 'fake failure mid-stream', type: 'server_error' } })}\n\n`);
}

/** The fake model calling a tool: OpenAI's answer, or its stream (id and name first, then the arguments in two pieces). */
async function toolCallAnswer(x: Exchange, body: any, messages: { role: string; content: string }[], tool: FakeToolCall): Promise<void> {
  const promptTokens = messages.reduce((n, m) => n + words(m.content).length, 0);
  const usage = { prompt_tokens: promptTokens, completion_tokens: 5, total_tokens: promptTokens + 5 };
  const base = { id: 'chatcmpl-fake', created: 1_700_000_000, model: body.model };
  const call = { id: tool.id, type: 'function', function: { name: tool.name, arguments: tool.arguments } };
  if (!body.stream) {
    const message = { role: 'assistant', content: null, tool_calls: [call], refusal: null, annotations: [] };
    return sendAnswer(x, { ...base, object: 'chat.completion', choices: [{ index: 0, message, logprobs: null, finish_reason: 'tool_calls' }], usage });
  }
  const frame = (delta: unknown, finish: string | null, extra: Record<string, unknown> = {}) =>
    `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }], ...extra })}\n\n`;
  const half = Math.floor(tool.arguments.length / 2);
  const frames = [
    frame({ role: 'assistant', content: null, tool_calls: [{ index: 0, ...call, function: { name: tool.name, arguments: '' } }] }, null),
    frame({ tool_calls: [{ index: 0, function: { arguments: tool.arguments.slice(0, half) } }] }, null),
    frame({ tool_calls: [{ index: 0, function: { arguments: tool.arguments.slice(half) } }] }, null),
    frame({}, 'tool_calls'),
  ];
  if (body.stream_options?.include_usage === true) frames.push(`data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\n`);
  frames.push('data: [DONE]\n\n');
  await sendStream(x, frames, 'data: {"error":{"message":"fake failure mid-stream"}}\n\n');
}

/** A deterministic vector per text: the same input gives the same embedding. */
export function fakeEmbedding(text: string, dimensions: number): number[] {
  let h = 2166136261;
  for (const ch of text) h = Math.imul(h ^ ch.codePointAt(0)!, 16777619) >>> 0;
  return Array.from({ length: dimensions }, (_, k) => (((h + k * 2654435761) >>> 0) % 2000) / 1000 - 1);
}

function embeddings(x: Exchange, body: any, defaultDimensions: number): void {
  // As OpenAI: a string, a list of strings, one list of token ids, or a list of them.
  const isTokens = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && t >= 0);
  const inputs: unknown[] = typeof body.input === 'string' || isTokens(body.input) ? [body.input] : Array.isArray(body.input) ? body.input : [];
  if (inputs.length === 0 || !(inputs.every((s) => typeof s === 'string') || inputs.every(isTokens))) {
    return openaiError(x, 400, "'$.input' is invalid: a string, a list of strings, a list of token ids or a list of them");
  }
  const dims: number = body.dimensions ?? defaultDimensions;
  const data = (inputs as (string | number[])[]).map((item, index) => {
    const vector = fakeEmbedding(typeof item === 'string' ? item : item.join(' '), dims);
    const embedding = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const tokens = (inputs as (string | number[])[]).reduce((n, s) => n + (typeof s === 'string' ? words(s).length : s.length), 0);
  sendAnswer(x, { object: 'list', data, model: body.model, usage: x.behaviour.usage ?? { prompt_tokens: tokens, total_tokens: tokens } });
}
