// Chat completions against any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp server,
// Groq, Together...). The request is rebuilt from the fields we know, so nothing the client sent
// beyond them reaches the upstream; streams ask for the final usage chunk.
import { scrub, usableBaseUrl, type SseMessage, type UpstreamHttp } from '../http.ts';
import { isObject, openaiUsageOf, protocolError, type Json } from '../validate.ts';
import { UpstreamError, type ChatCapability, type ChatChunk, type ChatRequest, type ChatResult, type ResolvedRoute } from '../types.ts';
import { openaiCall } from './call.ts';

export function openaiChat(http: UpstreamHttp): ChatCapability {
  return {
    async complete(route, req, signal) {
      const json = await http.postJson(openaiCall(route, '/chat/completions', chatBody(route, req, false), signal));
      return parseCompletion(route.id, json);
    },
    async stream(route, req, signal) {
      const events = await http.openSse(openaiCall(route, '/chat/completions', chatBody(route, req, true), signal));
      return parseStream(route, events);
    },
  };
}

export function chatBody(route: ResolvedRoute, req: ChatRequest, stream: boolean): Json {
  const body: Json = {
    model: route.upstreamModel,
    messages: req.messages.map((m) => ({ role: m.role, content: m.content })),
  };
  if (req.temperature !== undefined) body.temperature = req.temperature;
  if (req.top_p !== undefined) body.top_p = req.top_p;
  if (req.max_tokens !== undefined) body[isOpenAIItself(route) ? 'max_completion_tokens' : 'max_tokens'] = req.max_tokens;
  if (req.stop !== undefined && req.stop.length > 0) body.stop = req.stop;
  if (req.n !== undefined) body.n = req.n;
  if (req.presence_penalty !== undefined) body.presence_penalty = req.presence_penalty;
  if (req.frequency_penalty !== undefined) body.frequency_penalty = req.frequency_penalty;
  if (req.seed !== undefined) body.seed = req.seed;
  if (req.response_format !== undefined) body.response_format = req.response_format;
  if (req.reasoning_effort !== undefined) body.reasoning_effort = req.reasoning_effort;
  if (req.verbosity !== undefined) body.verbosity = req.verbosity;
  if (req.logit_bias !== undefined) body.logit_bias = req.logit_bias;
  if (req.safety_identifier !== undefined) body.safety_identifier = req.safety_identifier;
  if (req.user !== undefined) body.user = req.user;
  if (req.prompt_cache_key !== undefined) body.prompt_cache_key = req.prompt_cache_key;
  if (stream) {
    body.stream = true;
    body.stream_options = { include_usage: true };
  }
  return body;
}

/**
 * OpenAI's own API deprecated `max_tokens` and its reasoning models refuse it; the compatible
 * servers (vLLM, Ollama, llama.cpp, Groq, Together) all take `max_tokens`.
 */
function isOpenAIItself(route: ResolvedRoute): boolean {
  return usableBaseUrl(route.baseUrl)?.hostname === 'api.openai.com';
}

export function parseCompletion(routeId: string, json: unknown): ChatResult {
  if (!isObject(json) || !Array.isArray(json.choices) || json.choices.length === 0) {
    throw protocolError(routeId, 'no choices');
  }
  const choices = json.choices.map((c: unknown, i: number) => {
    if (!isObject(c) || !isObject(c.message)) throw protocolError(routeId, 'a choice has no message');
    const { content } = c.message;
    if (content !== null && content !== undefined && typeof content !== 'string') {
      throw protocolError(routeId, 'a message content is not text');
    }
    return {
      index: choiceIndex(c.index) ?? i,
      message: { role: 'assistant' as const, content: content ?? '' },
      finish_reason: typeof c.finish_reason === 'string' ? c.finish_reason : 'stop',
    };
  });
  return { choices, usage: isObject(json.usage) ? openaiUsageOf(json.usage) : null };
}

/**
 * Translates stream events to chunks. Chunks with nothing for the client (a reasoning delta, an
 * empty keep-alive) are dropped. The stream must end with `[DONE]` or, for servers that omit it,
 * after a finish_reason; an earlier end is a cut-off stream and throws.
 */
export async function* parseStream(route: ResolvedRoute, events: AsyncIterable<SseMessage>): AsyncGenerator<ChatChunk> {
  let finished = false;
  for await (const m of events) {
    if (m.type === 'done') return;
    const chunk = parseChunk(route, m.data);
    if (chunk.choices.some((c) => c.finish_reason)) finished = true;
    if (chunk.choices.length > 0 || chunk.usage) yield chunk;
  }
  if (!finished) throw protocolError(route.id, 'the stream ended before it finished');
}

function parseChunk(route: ResolvedRoute, d: unknown): ChatChunk {
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
    if (typeof c.finish_reason === 'string') out.finish_reason = c.finish_reason;
    if (out.delta.role || out.delta.content || out.finish_reason) choices.push(out);
  }
  const usage = isObject(d.usage) ? openaiUsageOf(d.usage) : null;
  return usage ? { choices, usage } : { choices };
}

function choiceIndex(v: unknown): number | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v < 1024 ? v : null;
}
