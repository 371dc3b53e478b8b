// One gateway for a client library's tests, as a new user would meet it: fake OpenAI-compatible
// and Anthropic upstreams, a funded account and its key, and these models:
//   plain         OpenAI-compatible route, no tool calling (the spec's contract)
//   agent         OpenAI-compatible route, `tools: true`
//   claude-agent  Anthropic route, `tools: true`
//   gpt-5-mini, o3-mini   reasoning-looking ids (the AI SDK and LangChain send `developer` for them)
// `limited` is a second key on its own account, limited to 1 request a minute (for the 429).
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { startAnthropicUpstream } from '../fakes/anthropic-upstream.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 };

export interface ClientFixture {
  gw: TestGateway;
  up: FakeServer;
  anthropic: FakeServer;
  /** The gateway's OpenAI base URL, `<origin>/v1`. */
  baseURL: string;
  key: string;
  /** A session token of the key's owner (to read the wallet). */
  session: string;
  /** A fresh key allowed 1 request a minute. */
  limitedKey(): Promise<string>;
  /** The last chat body an OpenAI-compatible route received. */
  lastUpstreamBody(): Record<string, any>;
  close(): Promise<void>;
}

export async function startClientFixture(): Promise<ClientFixture> {
  const up = await startOpenAIUpstream({ apiKey: 'sk-up' });
  const anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant' });
  const gw = await startTestGateway();
  const put = async (id: string, route: Record<string, unknown>, over: Record<string, unknown> = {}) => {
    const r = await call(gw.url, 'PUT', `/admin/models/${id}`, {
      token: ADMIN_TOKEN,
      body: { type: 'llm', owned_by: 'test', context_window: 8192, max_output_tokens: 4096, pricing: PRICING, routes: [route], ...over },
    });
    assert.ok(r.status === 200 || r.status === 201, r.text);
  };
  const openaiRoute = { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' };
  await put('plain', openaiRoute);
  await put('agent', openaiRoute, { tools: true });
  await put('claude-agent', { provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant', upstream_model: 'claude-up' }, { tools: true });
  await put('gpt-5-mini', openaiRoute, { reasoning: true, tools: true });
  await put('o3-mini', openaiRoute, { reasoning: true });
  const fund = async (amount_cents: number) => {
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents } })).status, 201);
    return s;
  };
  const s = await fund(100_000);
  const key = (await createKey(gw.url, s.token)).api_key;
  return {
    gw,
    up,
    anthropic,
    baseURL: `${gw.url}/v1`,
    key,
    session: s.token,
    async limitedKey() {
      const owner = await fund(1000);
      const k = await createKey(gw.url, owner.token);
      assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { rpm: 1 } })).status, 200);
      return k.api_key;
    },
    lastUpstreamBody: () => up.calls('/v1/chat/completions').at(-1)!.body,
    async close() {
      await gw.destroy();
      await up.close();
      await anthropic.close();
    },
  };
}

/** A fetch that keeps each JSON body a client sends (to see what the client itself put on the wire). */
export function recordingFetch(): { fetch: typeof fetch; sent: Record<string, any>[] } {
  const sent: Record<string, any>[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    if (typeof init?.body === 'string') sent.push(JSON.parse(init.body));
    return fetch(input, init);
  };
  return { fetch: recording as typeof fetch, sent };
}

/** The roles of the messages (chat) or input items (Responses API) a client sent. */
export const sentRoles = (body: Record<string, any>): string[] => (body.messages ?? body.input ?? []).map((m: any) => m.role);

/** A tool-using conversation's history: the call, then its result (what every agent loop sends second). */
export const TOOL_HISTORY = [
  { role: 'user', content: 'weather in Paris?' },
  { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"query":"Paris"}' } }] },
  { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
] as const;

/** The JSON a structured-output test asks the fake model to answer with. */
export const CITY_JSON = '{"city":"Paris","population":2100000}';

/** How a client reports a refused call: the HTTP status and the envelope's code, param and message. */
export interface Refusal {
  status: number;
  code: string;
  param: string | null;
  message: string;
}

/** The refusal of a call made through openai-node (or a library on it): the APIError it throws. */
export async function openaiRefusal(p: Promise<unknown>): Promise<Refusal> {
  try {
    await p;
  } catch (e: any) {
    assert.equal(typeof e.status, 'number', String(e));
    return { status: e.status, code: e.code, param: e.param ?? null, message: e.message };
  }
  assert.fail('the call was not refused');
}
