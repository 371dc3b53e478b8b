// POST /v1/responses through openai-node's own `responses.create`: text, streaming events, tools
// (a tools-enabled model), structured output, and the stateless refusals.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { startAnthropicUpstream } from '../fakes/anthropic-upstream.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 };
const WEATHER: OpenAI.Responses.FunctionTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  strict: null,
  parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
};

describe('POST /v1/responses', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let anthropic: FakeServer;
  let key: string;
  let ai: OpenAI;

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up' });
    anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant' });
    gw = await startTestGateway();
    const put = async (id: string, route: Record<string, unknown>, over: Record<string, unknown> = {}) => {
      const r = await call(gw.url, 'PUT', `/admin/models/${id}`, {
        token: ADMIN_TOKEN,
        body: { type: 'llm', owned_by: 'test', context_window: 4096, max_output_tokens: 512, pricing: PRICING, routes: [route], ...over },
      });
      assert.ok(r.status === 200 || r.status === 201, r.text);
    };
    await put('plain', { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' });
    await put('agent', { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' }, { tools: true });
    await put('claude-agent', { provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant', upstream_model: 'claude-up' }, { tools: true });
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100_000 } })).status, 201);
    key = (await createKey(gw.url, s.token)).api_key;
    ai = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  });
  after(async () => {
    await gw.destroy();
    await up.close();
    await anthropic.close();
  });

  it('text: a string input with instructions, answered as a response with usage', async () => {
    const r = await ai.responses.create({ model: 'plain', instructions: 'Be brief.', input: 'tell me about rivers', max_output_tokens: 100, temperature: 0.5 });
    assert.equal(r.object, 'response');
    assert.match(r.id, /^resp_/);
    assert.equal(r.status, 'completed');
    assert.equal(r.model, 'plain');
    assert.equal(r.output_text, 'You said: tell me about rivers');
    assert.ok(r.usage!.input_tokens > 0 && r.usage!.output_tokens > 0);
    assert.equal(r.usage!.total_tokens, r.usage!.input_tokens + r.usage!.output_tokens);
    const seen = up.calls('/v1/chat/completions').at(-1)!.body;
    assert.deepEqual(seen.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'tell me about rivers' },
    ]);
    assert.equal(seen.max_tokens, 100);
    assert.equal(seen.temperature, 0.5);
  });

  it('streaming: the typed events in order, the text deltas adding up, completed with usage', async () => {
    const stream = await ai.responses.create({
      model: 'plain',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'tell me about rivers' }] }],
      stream: true,
    });
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    let seq = -1;
    for await (const ev of stream) {
      types.push(ev.type);
      assert.equal(ev.sequence_number, seq + 1);
      seq = ev.sequence_number;
      if (ev.type === 'response.output_text.delta') text += ev.delta;
      if (ev.type === 'response.completed') completed = ev.response;
    }
    assert.equal(types[0], 'response.created');
    assert.equal(types.at(-1), 'response.completed');
    for (const t of ['response.output_item.added', 'response.content_part.added', 'response.output_text.done', 'response.output_item.done'])
      assert.ok(types.includes(t), t);
    assert.equal(text, 'You said: tell me about rivers');
    assert.ok(completed && completed.usage!.output_tokens > 0);
    assert.equal((completed.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0]!.type, 'output_text');
    // OpenAI's required fields: the text part's logprobs (none: []), the usage's cache writes.
    assert.deepEqual((completed.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0], { type: 'output_text', text, annotations: [], logprobs: [] });
    assert.equal(completed.usage!.input_tokens_details.cached_tokens, 0);
    assert.equal((completed.usage!.input_tokens_details as { cache_write_tokens?: number }).cache_write_tokens, 0);
  });

  it("the stream's early response objects carry no usage (optional, never null); the echoed tools carry parameters and strict (required, nullable); arguments.done names the function", async () => {
    const tool = { type: 'function' as const, name: 'get_weather', parameters: null, strict: null };
    const stream = await ai.responses.create({
      model: 'agent',
      input: 'Paris',
      tools: [tool],
      tool_choice: { type: 'function', name: 'get_weather' },
      stream: true,
    });
    const events: OpenAI.Responses.ResponseStreamEvent[] = [];
    for await (const ev of stream) events.push(ev);
    for (const ev of events.filter((e) => e.type === 'response.created' || e.type === 'response.in_progress')) {
      const response = (ev as OpenAI.Responses.ResponseCreatedEvent).response;
      assert.equal('usage' in response, false, `${ev.type}: usage absent, not null`);
      assert.deepEqual(response.tools, [{ type: 'function', name: 'get_weather', description: null, parameters: null, strict: null }]);
    }
    const done = events.find((e) => e.type === 'response.function_call_arguments.done') as OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent;
    assert.equal(done.name, 'get_weather');
    const withSchema = await ai.responses.create({ model: 'agent', input: 'Paris', tools: [WEATHER] });
    assert.deepEqual(withSchema.tools, [
      { type: 'function', name: WEATHER.name, description: WEATHER.description ?? null, parameters: WEATHER.parameters, strict: WEATHER.strict ?? null },
    ]);
  });

  for (const model of ['agent', 'claude-agent']) {
    it(`tools on ${model}: a function_call item, its output sent back, the answer; streamed argument deltas`, async () => {
      const first = await ai.responses.create({ model, input: 'Paris', tools: [WEATHER] });
      const fc = first.output.find((o) => o.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
      assert.equal(fc.name, 'get_weather');
      assert.deepEqual(JSON.parse(fc.arguments), { query: 'Paris' });
      const second = await ai.responses.create({
        model,
        input: [
          { role: 'user', content: 'Paris' },
          { type: 'function_call', call_id: fc.call_id, name: fc.name, arguments: fc.arguments },
          { type: 'function_call_output', call_id: fc.call_id, output: 'rain' },
        ],
        tools: [WEATHER],
      });
      assert.equal(second.output_text, 'The tool said: rain');

      const stream = await ai.responses.create({
        model,
        input: 'Paris',
        tools: [WEATHER],
        tool_choice: { type: 'function', name: 'get_weather' },
        stream: true,
      });
      let args = '';
      let done: OpenAI.Responses.ResponseFunctionToolCall | undefined;
      for await (const ev of stream) {
        if (ev.type === 'response.function_call_arguments.delta') args += ev.delta;
        if (ev.type === 'response.output_item.done' && ev.item.type === 'function_call') done = ev.item;
      }
      assert.deepEqual(JSON.parse(args), { query: 'Paris' });
      assert.equal(done!.arguments, args);
    });
  }

  it("a function call after the assistant's text joins its turn: one assistant message, as strict chat templates need", async () => {
    const r = await ai.responses.create({
      model: 'agent',
      input: [
        { role: 'user', content: 'Paris' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.', annotations: [] }], id: 'msg_1', status: 'completed' },
        { type: 'function_call', call_id: 'call_9', name: 'get_weather', arguments: '{"query":"Paris"}' },
        { type: 'function_call_output', call_id: 'call_9', output: 'rain' },
      ],
      tools: [WEATHER],
    });
    assert.equal(r.output_text, 'The tool said: rain');
    assert.deepEqual(up.calls('/v1/chat/completions').at(-1)!.body.messages.slice(1), [
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"query":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_9', content: 'rain' },
    ]);
  });

  it('structured output: text.format json_schema becomes response_format', async () => {
    await ai.responses.create({
      model: 'plain',
      input: 'x',
      text: { format: { type: 'json_schema', name: 'city', schema: { type: 'object', properties: {} }, strict: true } },
    });
    const seen = up.calls('/v1/chat/completions').at(-1)!.body;
    assert.deepEqual(seen.response_format, { type: 'json_schema', json_schema: { name: 'city', schema: { type: 'object', properties: {} }, strict: true } });
  });

  it('refuses clearly what a stateless gateway cannot do, and tools on a model without them', async () => {
    const refused = async (body: Record<string, unknown>, param: string, code = 'invalid_request') => {
      const r = await call(gw.url, 'POST', '/v1/responses', { token: key, body: { model: 'plain', input: 'x', ...body } });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, code);
      assert.equal(r.body.error.param, param);
    };
    await refused({ store: true }, 'store');
    await refused({ previous_response_id: 'resp_1' }, 'previous_response_id');
    await refused({ max_output_tokens: 100_000 }, 'max_output_tokens');
    await refused({ tools: [WEATHER] }, 'tools');
    await refused({ input: [{ type: 'function_call_output', call_id: 'c', output: 'o' }] }, 'messages.0.role', 'invalid_message_role');
    await refused({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: 'x' }] }] }, 'input.0.content.0.type');
    await refused({ include: ['reasoning.encrypted_content', 'message.output_text.logprobs'] }, 'include.1');
    await refused({ truncation: 'auto' }, 'truncation');
    const ok = await call(gw.url, 'POST', '/v1/responses', { token: key, body: { model: 'plain', input: 'x', store: false, tools: null, user: null } });
    assert.equal(ok.status, 200, ok.text);
  });

  it("what LlamaIndex's OpenAIResponses sends by default means nothing: empty instructions, tools and include; metadata echoed", async () => {
    const r = await call(gw.url, 'POST', '/v1/responses', {
      token: key,
      body: {
        model: 'plain',
        input: [{ role: 'user', content: 'hi' }],
        reasoning: {},
        include: null,
        tools: [],
        instructions: '',
        previous_response_id: null,
        store: false,
        metadata: { run: 'r1' },
        top_p: 1,
        truncation: null,
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.metadata, { run: 'r1' });
    const seen = up.calls('/v1/chat/completions').at(-1)!.body;
    assert.deepEqual(seen.messages, [{ role: 'user', content: 'hi' }]);
    assert.equal('tools' in seen || 'metadata' in seen, false);
    const kept = await call(gw.url, 'POST', '/v1/responses', {
      token: key,
      body: { model: 'plain', input: 'x', include: ['reasoning.encrypted_content'], truncation: 'disabled' },
    });
    assert.equal(kept.status, 200, kept.text);
  });
});
