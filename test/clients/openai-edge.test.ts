// openai-edge (fetch-based, at parity with openai v3.3: every call resolves to the fetch Response)
// against the gateway: plain, streaming (its SSE read as its users read it), tools on a
// tools-enabled model (`tools` passed through its untyped body; its typed `functions` are OpenAI's
// deprecated form), structured output, and the refusals on a model without tools, read from the body.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Configuration, OpenAIApi, type CreateChatCompletionRequest, type ResponseTypes } from 'openai-edge';
import { CITY_JSON, startClientFixture, TOOL_HISTORY, type ClientFixture } from './fixture.ts';

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
};

/** The `data:` payloads of an SSE body, `[DONE]` included. */
async function sseData(res: Response): Promise<string[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((f) => f.startsWith('data: '))
    .map((f) => f.slice(6));
}

describe('openai-edge', () => {
  let f: ClientFixture;
  let api: OpenAIApi;
  // Fields the library does not type (tools, response_format...) go in the body as given.
  const create = (body: Record<string, unknown>) => api.createChatCompletion(body as unknown as CreateChatCompletionRequest);

  before(async () => {
    f = await startClientFixture();
    api = new OpenAIApi(new Configuration({ apiKey: f.key, basePath: f.baseURL }));
  });
  after(() => f.close());

  it('plain: the completion as its ResponseTypes describe it', async () => {
    const res = await api.createChatCompletion({
      model: 'plain',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'tell me about rivers' },
      ],
    });
    assert.equal(res.status, 200);
    const data = (await res.json()) as ResponseTypes['createChatCompletion'];
    assert.equal(data.choices[0]!.message!.content, 'You said: tell me about rivers');
    assert.ok(data.usage!.completion_tokens > 0);
  });

  it('streaming: chunks then [DONE]', async () => {
    const res = await api.createChatCompletion({ model: 'plain', messages: [{ role: 'user', content: 'tell me about rivers' }], stream: true });
    assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
    const data = await sseData(res);
    assert.equal(data.at(-1), '[DONE]');
    const text = data
      .slice(0, -1)
      .map((d) => JSON.parse(d).choices[0]?.delta?.content ?? '')
      .join('');
    assert.equal(text, 'You said: tell me about rivers');
  });

  for (const id of ['agent', 'claude-agent']) {
    it(`tools on ${id}: a call, its result, the answer`, async () => {
      const first = (await (await create({ model: id, messages: [{ role: 'user', content: 'Paris' }], tools: [WEATHER] })).json()) as any;
      const message = first.choices[0].message;
      assert.equal(first.choices[0].finish_reason, 'tool_calls');
      assert.deepEqual(JSON.parse(message.tool_calls[0].function.arguments), { query: 'Paris' });
      const second = (await (
        await create({
          model: id,
          messages: [{ role: 'user', content: 'Paris' }, message, { role: 'tool', tool_call_id: message.tool_calls[0].id, content: 'rain' }],
          tools: [WEATHER],
        })
      ).json()) as any;
      assert.equal(second.choices[0].message.content, 'The tool said: rain');
    });
  }

  it('structured output: response_format json_schema passed on, the JSON answered', async () => {
    f.up.next({ reply: CITY_JSON });
    const format = { type: 'json_schema', json_schema: { name: 'city', schema: { type: 'object', properties: { city: { type: 'string' } } }, strict: true } };
    const data = (await (await create({ model: 'plain', messages: [{ role: 'user', content: 'Paris?' }], response_format: format })).json()) as any;
    assert.deepEqual(JSON.parse(data.choices[0].message.content), JSON.parse(CITY_JSON));
    assert.deepEqual(f.lastUpstreamBody().response_format, format);
  });

  it('a model without tools: the spec codes in the body; its typed functions and function role refused by name', async () => {
    const tools = await create({ model: 'plain', messages: [{ role: 'user', content: 'Paris' }], tools: [WEATHER] });
    assert.equal(tools.status, 400);
    assert.deepEqual(((await tools.json()) as any).error.code, 'invalid_request');
    const history = await create({ model: 'plain', messages: TOOL_HISTORY });
    const h = (await history.json()) as any;
    assert.equal(history.status, 400);
    assert.equal(h.error.code, 'invalid_message_role');
    assert.equal(h.error.param, 'messages.2.role');
    const fn = await api.createChatCompletion({ model: 'agent', messages: [{ role: 'function', name: 'get_weather', content: 'rain' }] });
    assert.equal(fn.status, 400);
    assert.equal(((await fn.json()) as any).error.code, 'invalid_message_role');
    const legacy = await api.createChatCompletion({ model: 'agent', messages: [{ role: 'user', content: 'Paris' }], functions: [WEATHER.function] });
    const l = (await legacy.json()) as any;
    assert.equal(legacy.status, 400);
    assert.equal(l.error.param, 'functions');
    assert.match(l.error.message, /tools/);
  });

  it("max_tokens above the model's maximum names max_tokens; a per-key 429 is the spec's bare {detail}", async () => {
    const big = await api.createChatCompletion({ model: 'plain', messages: [{ role: 'user', content: 'hi' }], max_tokens: 100_000 });
    assert.equal(big.status, 400);
    assert.equal(((await big.json()) as any).error.param, 'max_tokens');
    const limited = new OpenAIApi(new Configuration({ apiKey: await f.limitedKey(), basePath: f.baseURL }));
    assert.equal((await limited.createChatCompletion({ model: 'plain', messages: [{ role: 'user', content: 'hi' }] })).status, 200);
    const res = await limited.createChatCompletion({ model: 'plain', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(res.status, 429);
    const body = (await res.json()) as any;
    assert.deepEqual(Object.keys(body), ['detail']);
    assert.match(body.detail, /per-minute limit/);
  });
});
