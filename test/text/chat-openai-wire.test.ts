// What OpenAI's own clients send, through the gateway: the spec's codes first, OpenAI's nulls and
// read-only answer fields as absent, `developer` as system, the output cap named, and tool calling
// on models that allow it (OpenAI-compatible and Anthropic routes, answers and streams).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway, inOneRateWindow } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { startAnthropicUpstream } from '../fakes/anthropic-upstream.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 };
const WEATHER: OpenAI.ChatCompletionTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
};

describe('chat as OpenAI clients send it', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let anthropic: FakeServer;
  let key: string;
  let walletToken: string;

  const put = async (id: string, route: Record<string, unknown>, over: Record<string, unknown> = {}) => {
    const r = await call(gw.url, 'PUT', `/admin/models/${id}`, {
      token: ADMIN_TOKEN,
      body: { type: 'llm', owned_by: 'test', context_window: 4096, max_output_tokens: 512, pricing: PRICING, routes: [route], ...over },
    });
    assert.ok(r.status === 200 || r.status === 201, r.text);
  };
  const chat = (body: Record<string, unknown>) => call(gw.url, 'POST', '/v1/chat/completions', { token: key, body });
  const client = () => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up' });
    anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant' });
    gw = await startTestGateway();
    const openaiRoute = { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' };
    const anthropicRoute = { provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant', upstream_model: 'claude-up' };
    await put('plain', openaiRoute);
    await put('agent', openaiRoute, { tools: true });
    await put('claude-agent', anthropicRoute, { tools: true });
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100_000 } })).status, 201);
    key = (await createKey(gw.url, s.token)).api_key;
    walletToken = s.token;
  });
  after(async () => {
    await gw.destroy();
    await up.close();
    await anthropic.close();
  });

  it('an unsupported role is invalid_message_role whatever else the message carries', async () => {
    const history = [
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const r = await chat({ model: 'plain', messages: history });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'invalid_message_role');
    assert.equal(r.body.error.param, 'messages.2.role');
    assert.match(r.body.error.message, /tool calling is not enabled for model 'plain'/);
    const fn = await chat({ model: 'plain', messages: [{ role: 'function', name: 'f', content: 'x', extra: 1 }] });
    assert.equal(fn.body.error.code, 'invalid_message_role', fn.text);
    assert.equal(fn.body.error.param, 'messages.0.role');
  });

  it('tools on a model without the flag: 400 naming the field, saying tool calling is not enabled', async () => {
    for (const [extra, param] of [
      [{ tools: [WEATHER] }, 'tools'],
      [{ tool_choice: 'auto' }, 'tool_choice'],
      [{ parallel_tool_calls: false }, 'parallel_tool_calls'],
    ] as const) {
      const r = await chat({ model: 'plain', messages: [{ role: 'user', content: 'hi' }], ...extra });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param);
      assert.match(r.body.error.message, /tool calling is not enabled/);
    }
    const models = await call(gw.url, 'GET', '/v1/models', { token: key });
    const byId = new Map(models.body.data.map((m: any) => [m.id, m]));
    assert.equal((byId.get('plain') as any).tools, false);
    assert.equal((byId.get('agent') as any).tools, true);
  });

  it("OpenAI's nulls and its answers' read-only fields are absent, never forwarded; developer is a system instruction", async () => {
    const r = await chat({
      model: 'plain',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'user', content: 'hello' },
        { role: 'assistant', content: 'hi there', refusal: null, annotations: [] },
        { role: 'user', content: 'rivers', name: null },
      ],
      stop: null,
      seed: null,
      n: null,
      temperature: null,
      top_p: null,
      max_tokens: null,
      user: null,
      logprobs: null,
      response_format: null,
      stream_options: null,
      store: false,
    });
    assert.equal(r.status, 200, r.text);
    const seen = up.calls('/v1/chat/completions').at(-1)!.body;
    assert.deepEqual(seen.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'hi there' },
      { role: 'user', content: 'rivers' },
    ]);
    for (const k of ['stop', 'seed', 'n', 'temperature', 'top_p', 'user', 'logprobs', 'response_format', 'store']) assert.equal(k in seen, false, k);
    const stored = await chat({ model: 'plain', messages: [{ role: 'user', content: 'hi' }], store: true });
    assert.equal(stored.status, 400, stored.text);
    assert.equal(stored.body.error.param, 'store');
  });

  it('an output cap above the model maximum names max_tokens; one that overflows the window names it too', async () => {
    const big = await chat({ model: 'plain', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100_000 });
    assert.equal(big.status, 400, big.text);
    assert.equal(big.body.error.code, 'invalid_request');
    assert.equal(big.body.error.param, 'max_tokens');
    await put(
      'small-window',
      { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' },
      { context_window: 100, max_output_tokens: 90 },
    );
    const over = await chat({ model: 'small-window', messages: [{ role: 'user', content: 'a few words of prompt here' }], max_completion_tokens: 90 });
    assert.equal(over.body.error.code, 'context_length_exceeded', over.text);
    assert.equal(over.body.error.param, 'max_completion_tokens');
  });

  it("a per-key limit's 429 reaches openai-node with its reason; plain clients keep the spec's bare {detail}", async () => {
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 1000 } })).status, 201);
    const k = await createKey(gw.url, s.token);
    assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { rpm: 1 } })).status, 200);
    const ai = new OpenAI({ apiKey: k.api_key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await inOneRateWindow();
    await ai.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'hi' }] });
    await assert.rejects(ai.chat.completions.create({ model: 'plain', messages: [{ role: 'user', content: 'hi' }] }), (e: unknown) => {
      assert.ok(e instanceof OpenAI.RateLimitError);
      assert.match(e.message, /^429 .*per-minute limit/);
      assert.equal(e.code, 'rate_limit_exceeded');
      return true;
    });
    const plain = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: k.api_key,
      body: { model: 'plain', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(plain.status, 429);
    assert.deepEqual(Object.keys(plain.body), ['detail']);
  });

  for (const model of ['agent', 'claude-agent']) {
    it(`tool calling on ${model}: a call, its result, the answer; streamed deltas; billed`, async () => {
      const ai = client();
      const before = (await call(gw.url, 'GET', '/portal/wallet', { token: walletToken })).body;
      const messages: OpenAI.ChatCompletionMessageParam[] = [
        { role: 'system', content: 'Use tools.' },
        { role: 'user', content: 'Paris' },
      ];
      const first = await ai.chat.completions.create({ model, messages, tools: [WEATHER], tool_choice: 'auto', parallel_tool_calls: false });
      const choice = first.choices[0]!;
      assert.equal(choice.finish_reason, 'tool_calls');
      assert.equal(choice.message.content, null);
      const tc = choice.message.tool_calls![0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
      assert.equal(tc.function.name, 'get_weather');
      assert.deepEqual(JSON.parse(tc.function.arguments), { query: 'Paris' });
      assert.ok(first.usage!.completion_tokens > 0);

      // The history as the client keeps it, OpenAI's read-only fields included.
      const followUp = await ai.chat.completions.create({
        model,
        messages: [
          ...messages,
          { ...choice.message, refusal: null } as OpenAI.ChatCompletionMessageParam,
          { role: 'tool', tool_call_id: tc.id, content: 'sunny, 21 C' },
        ],
        tools: [WEATHER],
      });
      assert.equal(followUp.choices[0]!.message.content, 'The tool said: sunny, 21 C');

      const stream = await ai.chat.completions.create({
        model,
        messages,
        tools: [WEATHER],
        tool_choice: { type: 'function', function: { name: 'get_weather' } },
        stream: true,
        stream_options: { include_usage: true },
      });
      let args = '';
      let name = '';
      let id = '';
      let finish = '';
      let usage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) {
        if (chunk.usage) usage = chunk.usage;
        const c = chunk.choices[0];
        if (!c) continue;
        for (const d of c.delta.tool_calls ?? []) {
          assert.equal(d.index, 0);
          if (d.id) id = d.id;
          name += d.function?.name ?? '';
          args += d.function?.arguments ?? '';
        }
        if (c.finish_reason) finish = c.finish_reason;
      }
      assert.equal(id, 'call_fake_1');
      assert.equal(name, 'get_weather');
      assert.deepEqual(JSON.parse(args), { query: 'Paris' });
      assert.equal(finish, 'tool_calls');
      assert.ok(usage && usage.completion_tokens > 0);
      const after_ = (await call(gw.url, 'GET', '/portal/wallet', { token: walletToken })).body;
      assert.ok(JSON.stringify(after_) !== JSON.stringify(before), 'the calls were charged');
    });
  }

  it('on an Anthropic route the tools and history are translated as the Messages API takes them', async () => {
    const ai = client();
    await ai.chat.completions.create({
      model: 'claude-agent',
      messages: [
        { role: 'user', content: 'Paris' },
        {
          role: 'assistant',
          content: 'Looking.',
          tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"query":"Paris"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_9', content: 'rain' },
      ],
      tools: [WEATHER],
      tool_choice: 'required',
      parallel_tool_calls: false,
    });
    const seen = anthropic.calls('/v1/messages').at(-1)!.body;
    assert.deepEqual(seen.tools, [{ name: 'get_weather', description: 'The weather in a city', input_schema: WEATHER.function.parameters }]);
    assert.deepEqual(seen.tool_choice, { type: 'any', disable_parallel_tool_use: true });
    assert.deepEqual(seen.messages, [
      { role: 'user', content: 'Paris' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Looking.' },
          { type: 'tool_use', id: 'call_9', name: 'get_weather', input: { query: 'Paris' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_9', content: 'rain' }] },
    ]);
  });
});
