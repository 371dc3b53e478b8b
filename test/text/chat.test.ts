// The metered chat and embeddings path end to end: the official `openai` client against the
// gateway on loopback, the gateway against fake upstreams that speak the real wire formats.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { startAnthropicUpstream } from '../fakes/anthropic-upstream.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 }; // per token: 150 and 600 µ¢
const FRACTIONAL = { input_cents_per_mtok: 12345.678, output_cents_per_mtok: 98765.4321 }; // fractions of a µ¢ per token

async function putModel(gw: TestGateway, id: string, routes: unknown[], over: Record<string, unknown> = {}) {
  const r = await call(gw.url, 'PUT', `/admin/models/${id}`, {
    token: ADMIN_TOKEN,
    body: { type: 'llm', owned_by: 'test', context_window: 4096, max_output_tokens: 512, pricing: PRICING, routes, ...over },
  });
  assert.ok(r.status === 200 || r.status === 201, r.text);
}

async function fundedUser(gw: TestGateway, cents = 100_000) {
  const s = await signup(gw.url);
  const t = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: cents } });
  assert.equal(t.status, 201, t.text);
  const key = await createKey(gw.url, s.token);
  return { ...s, key: key.api_key, prefix: key.prefix };
}

const wallet = async (gw: TestGateway, token: string) => (await call(gw.url, 'GET', '/portal/wallet', { token })).body;

describe('chat completions and embeddings through the gateway', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let anthropic: FakeServer;
  const deadPort = 'http://127.0.0.1:9/v1'; // discard port: connection refused

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-upstream-secret' });
    anthropic = await startAnthropicUpstream({ apiKey: 'sk-ant-secret' });
    gw = await startTestGateway();
    await putModel(gw, 'chat-a', [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'gpt-up' }]);
    await putModel(gw, 'chat-failover', [
      { provider: 'openai', base_url: deadPort, api_key: 'k', upstream_model: 'gpt-up' },
      { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'gpt-up' },
    ]);
    await putModel(gw, 'chat-dead', [{ provider: 'openai', base_url: deadPort, api_key: 'k', upstream_model: 'x' }]);
    await putModel(gw, 'chat-nokey', [{ provider: 'openai', base_url: `${up.url}/v1`, api_key_env: 'NO_SUCH_VARIABLE_SET', upstream_model: 'x' }]);
    await putModel(gw, 'claude', [{ provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant-secret', upstream_model: 'claude-up' }]);
    await putModel(gw, 'chat-cached', [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'gpt-up' }], {
      pricing: { ...PRICING, cached_input_cents_per_mtok: 15 },
    });
    await putModel(gw, 'reasoner', [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'o-up' }], {
      reasoning: true,
    });
    await putModel(gw, 'claude-thinks', [{ provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant-secret', upstream_model: 'claude-up' }], {
      reasoning: true,
      max_output_tokens: 4096,
    });
    await putModel(gw, 'claude-then-openai', [
      { provider: 'anthropic', base_url: anthropic.url, api_key: 'sk-ant-secret', upstream_model: 'claude-up' },
      { provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'gpt-up' },
    ]);
    const e = await call(gw.url, 'PUT', '/admin/models/embed-a', {
      token: ADMIN_TOKEN,
      body: {
        type: 'embedding',
        owned_by: 'test',
        pricing: { input_cents_per_mtok: 10 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'emb-up' }],
      },
    });
    assert.equal(e.status, 201, e.text);
    const small = await call(gw.url, 'PUT', '/admin/models/embed-small', {
      token: ADMIN_TOKEN,
      body: {
        type: 'embedding',
        owned_by: 'test',
        context_window: 4,
        pricing: { input_cents_per_mtok: 10 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'emb-up' }],
      },
    });
    assert.equal(small.status, 201, small.text);
  });
  after(async () => {
    await gw.destroy();
    await up.close();
    await anthropic.close();
  });

  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  it('the official openai client: models, chat, streaming chat and embeddings just work', async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const models = await ai.models.list();
    assert.ok(models.data.some((m) => m.id === 'chat-a'));
    const one = await ai.models.retrieve('chat-a');
    assert.equal(one.id, 'chat-a');
    assert.equal(one.object, 'model');
    await assert.rejects(
      ai.models.retrieve('no-such-model'),
      (e: unknown) => e instanceof OpenAI.NotFoundError && (e.error as { code?: string }).code === 'model_not_found',
    );

    const done = await ai.chat.completions.create({ model: 'chat-a', messages: [{ role: 'user', content: 'tell me about rivers' }] });
    assert.equal(done.object, 'chat.completion');
    assert.equal(done.model, 'chat-a', 'our virtual name, never the upstream one');
    assert.match(done.id, /^chatcmpl-/);
    assert.equal(done.choices[0]!.message.role, 'assistant');
    assert.ok(done.choices[0]!.message.content!.length > 0);
    assert.ok(Number.isInteger(done.usage!.prompt_tokens) && done.usage!.completion_tokens > 0);
    assert.equal(done.usage!.total_tokens, done.usage!.prompt_tokens + done.usage!.completion_tokens);

    // What the upstream saw: its own key and model, never the client's key.
    const seen = up.calls('/v1/chat/completions').at(-1)!;
    assert.equal(seen.headers.authorization, 'Bearer sk-upstream-secret');
    assert.equal(seen.body.model, 'gpt-up');
    assert.ok(!JSON.stringify(seen.headers).includes(u.key.slice(10)));

    const stream = await ai.chat.completions.create({
      model: 'chat-a',
      messages: [{ role: 'user', content: 'tell me about rivers' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let first = true;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      assert.equal(chunk.object, 'chat.completion.chunk');
      assert.equal(chunk.model, 'chat-a');
      if (chunk.usage) usage = chunk.usage;
      if (chunk.choices.length === 0) continue;
      if (first) {
        assert.equal(chunk.choices[0]!.delta.role, 'assistant', 'the first chunk carries the role');
        first = false;
      }
      text += chunk.choices[0]!.delta.content ?? '';
    }
    assert.equal(text, done.choices[0]!.message.content, 'the same reply, streamed');
    assert.ok(usage && usage.completion_tokens > 0);

    const emb = await ai.embeddings.create({ model: 'embed-a', input: ['one', 'two'] });
    assert.equal(emb.data.length, 2);
    assert.equal(emb.model, 'embed-a');
    assert.ok(Array.isArray(emb.data[0]!.embedding) && emb.data[0]!.embedding.length > 0);
    assert.ok(emb.usage.prompt_tokens > 0);
  });

  it('the Anthropic Messages provider serves the same OpenAI shapes, streaming too', async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const done = await ai.chat.completions.create({
      model: 'claude',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello there' },
      ],
    });
    assert.equal(done.model, 'claude');
    assert.ok(done.choices[0]!.message.content!.length > 0);
    assert.ok(done.usage!.prompt_tokens > 0);
    const seen = anthropic.calls('/v1/messages').at(-1)!;
    assert.equal(seen.headers['x-api-key'], 'sk-ant-secret');
    assert.equal(seen.body.system, 'be brief');
    let text = '';
    for await (const chunk of await ai.chat.completions.create({ model: 'claude', messages: [{ role: 'user', content: 'hello there' }], stream: true })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, done.choices[0]!.message.content);
  });

  it("OpenAI's sampling and format parameters reach a route that honours them; a route that cannot is passed over", async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const format = {
      type: 'json_schema' as const,
      json_schema: { name: 'river', schema: { type: 'object', properties: { name: { type: 'string' } } }, strict: true },
    };
    const done = await ai.chat.completions.create({
      model: 'chat-a',
      messages: [{ role: 'user', content: 'name a river as JSON' }],
      seed: 42,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      response_format: format,
      max_completion_tokens: 20,
    });
    assert.equal(done.model, 'chat-a');
    const seen = up.calls('/v1/chat/completions').at(-1)!.body;
    assert.equal(seen.seed, 42);
    assert.equal(seen.presence_penalty, 0.5);
    assert.equal(seen.frequency_penalty, -0.5);
    assert.deepEqual(seen.response_format, format);
    assert.equal(seen.max_tokens, 20, 'max_completion_tokens is the output cap (sent as max_tokens to a compatible server)');

    // Anthropic first, OpenAI-compatible second: a request Anthropic cannot honour goes to the second.
    const toAnthropic = () => anthropic.calls('/v1/messages').length;
    const before = toAnthropic();
    for (const extra of [{ seed: 1 }, { response_format: { type: 'json_object' as const } }, { n: 2 }]) {
      const r = await ai.chat.completions.create({ model: 'claude-then-openai', messages: [{ role: 'user', content: 'hi' }], ...extra });
      assert.equal(r.model, 'claude-then-openai');
      assert.match(r.choices[0]!.message.content!, /You said: hi/, 'the OpenAI-compatible route answered');
    }
    assert.equal(toAnthropic(), before, 'Anthropic was not called for them');
    await ai.chat.completions.create({ model: 'claude-then-openai', messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'text' } });
    assert.equal(toAnthropic(), before + 1, 'a request it can honour goes to the first route');

    // No route of the model honours it: 400 naming the parameter, nothing called, nothing charged.
    const wallet0 = await wallet(gw, u.token);
    for (const [extra, param] of [
      [{ seed: 1 }, 'seed'],
      [{ frequency_penalty: 1 }, 'frequency_penalty'],
      [{ response_format: { type: 'json_object' } }, 'response_format'],
    ] as const) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: u.key,
        body: { model: 'claude', messages: [{ role: 'user', content: 'hi' }], ...extra },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param);
      assert.match(r.body.error.message, /not supported by this model/);
      const s = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: u.key,
        body: { model: 'claude', messages: [{ role: 'user', content: 'hi' }], stream: true, ...extra },
      });
      assert.equal(s.status, 400, 'streaming too, before any event');
      assert.equal(s.body.error.param, param);
    }
    assert.equal(toAnthropic(), before + 1);
    assert.equal((await wallet(gw, u.token)).balance_cents, wallet0.balance_cents);
    // Their usage records say the request was refused, not that an upstream failed.
    const refusedId = (
      await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'claude', messages: [{ role: 'user', content: 'hi' }], seed: 3 } })
    ).body.error.request_id;
    const dead = (
      await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'chat-dead', messages: [{ role: 'user', content: 'hi' }] } })
    ).body.error.request_id;
    const statusOf = async (id: string) => {
      for (let i = 0; i < 100; i++) {
        const rows: { request_id: string; status: string }[] = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: u.token })).body.data;
        const row = rows.find((r) => r.request_id === id);
        if (row) return row.status;
        await new Promise((r) => setTimeout(r, 20));
      }
      return assert.fail(`no usage record for ${id}`);
    };
    assert.equal(await statusOf(refusedId), 'rejected');
    assert.equal(await statusOf(dead), 'upstream_failed');

    // The schema the reply must follow counts as prompt: it can exceed the context window alone.
    const huge = { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', description: 'word '.repeat(5000) } } };
    const r = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], response_format: huge },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'context_length_exceeded');
  });

  it('reasoning_effort reaches a reasoning model (Anthropic: as a thinking budget); its hidden tokens are reported and billed', async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const w0 = (await wallet(gw, u.token)).balance_cents;
    const done = await ai.chat.completions.create({
      model: 'reasoner',
      messages: [{ role: 'user', content: 'why is the sky blue' }],
      reasoning_effort: 'high',
      max_completion_tokens: 100,
    });
    assert.equal(up.calls('/v1/chat/completions').at(-1)!.body.reasoning_effort, 'high');
    const visible = done.choices[0]!.message.content!.split(' ').length; // the fake's one token per word
    assert.equal(done.usage!.completion_tokens_details?.reasoning_tokens, 7, 'the upstream reported 7 reasoning tokens');
    assert.equal(done.usage!.completion_tokens, visible + 7, 'hidden reasoning is part of the completion, as OpenAI bills it');
    let streamed: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await ai.chat.completions.create({
      model: 'reasoner',
      messages: [{ role: 'user', content: 'why is the sky blue' }],
      reasoning_effort: 'low',
      stream: true,
      stream_options: { include_usage: true },
    })) {
      if (chunk.usage) streamed = chunk.usage;
    }
    assert.equal(streamed?.completion_tokens_details?.reasoning_tokens, 7, "and in the stream's usage chunk");
    // The bill is the reported usage, hidden tokens included: 150 µ¢ per prompt token, 600 per completion token.
    const exact = (u2: OpenAI.CompletionUsage) => u2.prompt_tokens * 150 + u2.completion_tokens * 600;
    const spentCents = w0 - (await wallet(gw, u.token)).balance_cents;
    assert.ok(Math.abs(spentCents * 1e6 - (exact(done.usage!) + exact(streamed!))) <= 1e6, `spent ${spentCents}¢`);

    // A model that does not reason: 400 naming the parameter, before any upstream call or charge.
    const calls = up.calls('/v1/chat/completions').length;
    const r = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'low' },
    });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'invalid_request');
    assert.equal(r.body.error.param, 'reasoning_effort');
    assert.match(r.body.error.message, /not a reasoning model/);
    const bad = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'reasoner', messages: [{ role: 'user', content: 'x' }], reasoning_effort: 'extreme' },
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'reasoning_effort');
    assert.match(bad.body.error.message, /"none", "minimal", "low", "medium", "high", "xhigh"/);
    assert.equal(up.calls('/v1/chat/completions').length, calls);

    // Anthropic: extended thinking with the effort's budget; the thinking itself never reaches the client.
    const ant = () => anthropic.calls('/v1/messages').at(-1)!.body;
    const thought = await ai.chat.completions.create({
      model: 'claude-thinks',
      messages: [{ role: 'user', content: 'hello there' }],
      reasoning_effort: 'medium',
    });
    assert.deepEqual(ant().thinking, { type: 'enabled', budget_tokens: 4095 }, "medium's 8,192 cut to stay under max_tokens (the model's 4,096)");
    assert.equal(thought.choices[0]!.message.content, 'You said: hello there');
    assert.equal(thought.usage!.completion_tokens, 4 + 5, 'the thinking (5 tokens in the fake) is billed as output');
    let text = '';
    for await (const chunk of await ai.chat.completions.create({
      model: 'claude-thinks',
      messages: [{ role: 'user', content: 'hello there' }],
      reasoning_effort: 'minimal',
      max_tokens: 2000,
      stream: true,
    })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.deepEqual(ant().thinking, { type: 'enabled', budget_tokens: 1024 });
    assert.equal(text, 'You said: hello there', 'thinking deltas are not relayed');
    await ai.chat.completions.create({ model: 'claude-thinks', messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'none' });
    assert.equal(ant().thinking, undefined, 'none: no thinking');
    // What Anthropic refuses beside thinking is named before any call.
    const sent = anthropic.calls('/v1/messages').length;
    for (const [extra, param] of [
      [{ temperature: 0.2 }, 'temperature'],
      [{ top_p: 0.5 }, 'top_p'],
      [{ max_tokens: 1000 }, 'reasoning_effort'],
    ] as const) {
      const refused = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: u.key,
        body: { model: 'claude-thinks', messages: [{ role: 'user', content: 'hi' }], reasoning_effort: 'low', ...extra },
      });
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error.param, param);
    }
    assert.equal(anthropic.calls('/v1/messages').length, sent);
  });

  it('end-user ids and cache keys reach upstreams only as opaque per-account ids; logit_bias and verbosity pass through', async () => {
    const a = await fundedUser(gw);
    const b = await fundedUser(gw);
    const send = async (key: string, extra: Record<string, unknown>, model = 'chat-a') => {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content: 'hi' }], ...extra } });
      assert.equal(r.status, 200, r.text);
      return model === 'chat-a' ? up.calls('/v1/chat/completions').at(-1)!.body : anthropic.calls('/v1/messages').at(-1)!.body;
    };
    const ids = { safety_identifier: 'alice@example.com', user: 'alice@example.com', prompt_cache_key: 'support-bot-v1' };
    const seenA = await send(a.key, ids);
    for (const k of Object.keys(ids) as (keyof typeof ids)[]) {
      assert.match(seenA[k], /^[A-Za-z0-9_-]{43}$/, `${k} is an opaque id`);
      assert.ok(!String(seenA[k]).includes('alice') && !String(seenA[k]).includes('support'));
    }
    assert.equal(seenA.safety_identifier, seenA.user, 'the same value, the same id, whatever field');
    assert.notEqual(seenA.safety_identifier, seenA.prompt_cache_key);
    const againA = await send(a.key, ids);
    assert.deepEqual([againA.safety_identifier, againA.prompt_cache_key], [seenA.safety_identifier, seenA.prompt_cache_key], 'stable per account');
    const seenB = await send(b.key, ids);
    assert.notEqual(seenB.safety_identifier, seenA.safety_identifier, "another account's alice is another end user");
    assert.notEqual(seenB.prompt_cache_key, seenA.prompt_cache_key, "and another account's cache key another bucket");
    const plain = await send(a.key, {});
    assert.equal('safety_identifier' in plain || 'user' in plain || 'prompt_cache_key' in plain, false, 'nothing is invented when none was sent');
    // Anthropic takes the end user as metadata.user_id (safety_identifier first, else user).
    assert.deepEqual((await send(a.key, { user: 'alice@example.com' }, 'claude')).metadata, { user_id: seenA.user });

    const bias = { '50256': -100, '1734': 5 };
    const seen = await send(a.key, { logit_bias: bias, verbosity: 'low' });
    assert.deepEqual(seen.logit_bias, bias);
    assert.equal(seen.verbosity, 'low');
    for (const [extra, param] of [
      [{ logit_bias: { hello: 1 } }, 'logit_bias'],
      [{ logit_bias: { '1': 101 } }, 'logit_bias.1'],
      [{ verbosity: 'terse' }, 'verbosity'],
      [{ safety_identifier: 'x'.repeat(65) }, 'safety_identifier'],
    ] as const) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: a.key,
        body: { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], ...extra },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'invalid_request');
      assert.equal(r.body.error.param, param, r.text);
      if (param === 'logit_bias') assert.match(r.body.error.message, /key 'hello' must match pattern/);
    }
    // Embeddings take `user` the same way.
    const emb = await call(gw.url, 'POST', '/v1/embeddings', { token: a.key, body: { model: 'embed-a', input: 'x', user: 'alice@example.com' } });
    assert.equal(emb.status, 200, emb.text);
    assert.equal(up.calls('/v1/embeddings').at(-1)!.body.user, seenA.user);

    // The account sees its usage by end user, as sent (its own data); b's alice is b's.
    const today = new Date().toISOString().slice(0, 10);
    let byEndUser: { end_user: string; requests: number }[] = [];
    for (let i = 0; i < 100; i++) {
      byEndUser = (await call(gw.url, 'GET', `/portal/usage?group_by=end_user&from=${today}&to=${today}`, { token: a.token })).body.data;
      if (byEndUser.find((r) => r.end_user === 'alice@example.com')?.requests === 4) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.deepEqual(
      byEndUser.map((r) => [r.end_user, r.requests]),
      [['alice@example.com', 4]],
      'two chat calls with both ids, the Anthropic call with user, the embedding',
    );
    const records: { end_user: string | null }[] = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: a.token })).body.data;
    assert.ok(
      records.some((r) => r.end_user === null),
      'calls that named no end user say so',
    );
    const bView = (await call(gw.url, 'GET', `/portal/usage?group_by=end_user&from=${today}&to=${today}`, { token: b.token })).body.data;
    assert.deepEqual(
      bView.map((r: { end_user: string; requests: number }) => [r.end_user, r.requests]),
      [['alice@example.com', 1]],
    );

    // Anthropic has no logit_bias or verbosity: named, as the other parameters it lacks.
    for (const extra of [{ logit_bias: bias }, { verbosity: 'high' }]) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: a.key,
        body: { model: 'claude', messages: [{ role: 'user', content: 'x' }], ...extra },
      });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.param, Object.keys(extra)[0]);
    }
  });

  it('prompt tokens the upstream read from its cache are reported, and billed at the cached-input price where the model has one', async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110, prompt_tokens_details: { cached_tokens: 80 } };
    up.next({ usage });
    const cheap = await ai.chat.completions.create({ model: 'chat-cached', messages: [{ role: 'user', content: 'the long shared prefix' }] });
    assert.deepEqual(cheap.usage!.prompt_tokens_details, { cached_tokens: 80 });
    up.next({ usage });
    const plain = await ai.chat.completions.create({ model: 'chat-a', messages: [{ role: 'user', content: 'the long shared prefix' }] });
    assert.deepEqual(plain.usage!.prompt_tokens_details, { cached_tokens: 80 }, 'reported whatever the pricing');
    up.next({ usage });
    let streamed: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await ai.chat.completions.create({
      model: 'chat-cached',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
    })) {
      if (chunk.usage) streamed = chunk.usage;
    }
    assert.deepEqual(streamed?.prompt_tokens_details, { cached_tokens: 80 });
    // The bill: 20 uncached tokens at 150 µ¢, 80 cached at 15, 10 out at 600; chat-a has no cached price.
    const costs = new Map<string, { cost_microcents: number; cached_tokens: number | null }[]>();
    for (let i = 0; i < 100; i++) {
      const rows: { model: string; cost_microcents: number; cached_tokens: number | null }[] = (
        await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: u.token })
      ).body.data;
      costs.clear();
      for (const r of rows) costs.set(r.model, [...(costs.get(r.model) ?? []), r]);
      if (rows.length === 3) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const cached = 20 * 150 + 80 * 15 + 10 * 600;
    assert.deepEqual(
      costs.get('chat-cached')!.map((r) => [r.cost_microcents, r.cached_tokens]),
      [
        [cached, 80],
        [cached, 80],
      ],
      'the answer and the stream',
    );
    assert.equal(costs.get('chat-a')![0]!.cost_microcents, 100 * 150 + 10 * 600);
  });

  it('logprobs and top_logprobs come back per token, in answers and streams, only when asked for', async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const ask = { model: 'chat-a', messages: [{ role: 'user' as const, content: 'rivers and lakes' }] };
    const done = await ai.chat.completions.create({ ...ask, logprobs: true, top_logprobs: 2 });
    const content = done.choices[0]!.logprobs!.content!;
    assert.equal(content.map((t) => t.token).join(''), done.choices[0]!.message.content, 'one entry per output token');
    assert.deepEqual(content[0], {
      token: 'You',
      logprob: -0.01,
      bytes: [...Buffer.from('You')],
      top_logprobs: [
        { token: 'You', logprob: -0.01, bytes: [...Buffer.from('You')] },
        { token: 'You~1', logprob: -1.01, bytes: [...Buffer.from('You~1')] },
      ],
    });
    assert.deepEqual(Object.keys(done.choices[0]!.logprobs!), ['content', 'refusal'], 'only the documented fields are passed on');
    assert.equal(done.choices[0]!.logprobs!.refusal, null, 'refusals are never relayed');
    assert.equal(up.calls('/v1/chat/completions').at(-1)!.body.top_logprobs, 2);
    const plain = await ai.chat.completions.create(ask);
    assert.equal(plain.choices[0]!.logprobs, null, 'not asked: null (OpenAI requires the field)');
    assert.equal(plain.choices[0]!.message.refusal, null);

    let streamed = '';
    let tokens = '';
    for await (const chunk of await ai.chat.completions.create({ ...ask, logprobs: true, stream: true })) {
      const c = chunk.choices[0];
      streamed += c?.delta.content ?? '';
      tokens += (c?.logprobs?.content ?? []).map((t) => t.token).join('');
      for (const t of c?.logprobs?.content ?? []) assert.deepEqual(t.top_logprobs, [], 'no alternatives when top_logprobs is not given');
    }
    assert.equal(tokens, streamed, 'each streamed token arrives with its log probability');

    const r = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { ...ask, top_logprobs: 3 } });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.param, 'top_logprobs');
    assert.match(r.body.error.message, /requires logprobs/);
    const tooMany = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { ...ask, logprobs: true, top_logprobs: 21 } });
    assert.equal(tooMany.body.error.param, 'top_logprobs');
    const claude = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { ...ask, model: 'claude', logprobs: true } });
    assert.equal(claude.status, 400, claude.text);
    assert.equal(claude.body.error.param, 'logprobs', 'Anthropic has none: named, nothing charged');
  });

  it('message content may be an array of text parts, joined in order; other part types are refused', async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const done = await ai.chat.completions.create({
      model: 'chat-a',
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'be brief' }] },
        {
          role: 'user',
          content: [
            { type: 'text', text: '<task>rivers</task>' },
            { type: 'text', text: '\nand lakes' },
          ],
        },
      ],
    });
    assert.match(done.choices[0]!.message.content!, /You said: <task>rivers<\/task>\nand lakes/);
    assert.deepEqual(up.calls('/v1/chat/completions').at(-1)!.body.messages, [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: '<task>rivers</task>\nand lakes' },
    ]);
    let text = '';
    for await (const chunk of await ai.chat.completions.create({
      model: 'claude',
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hello there' }] }],
      stream: true,
    })) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.match(text, /hello there/);
    assert.equal(anthropic.calls('/v1/messages').at(-1)!.body.messages[0].content, 'hello there');

    const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
    const cases = [
      [[{ type: 'text', text: 'look' }, image], 'messages.0.content.1.type'],
      [[], 'messages.0.content'],
      [[{ type: 'text' }], 'messages.0.content.0.text'],
      [[{ type: 'text', text: 'x', cache_control: {} }], 'messages.0.content.0.cache_control'],
      [[{ text: 'x' }], 'messages.0.content.0.type'],
    ] as const;
    for (const [content, param] of cases) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'chat-a', messages: [{ role: 'user', content }] } });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.param, param, r.text);
    }
  });

  it("embeddings take OpenAI's four input shapes, token ids included (LangChain's default), counted exactly", async () => {
    const u = await fundedUser(gw);
    const ai = client(u.key);
    const seen = () => up.calls('/v1/embeddings').at(-1)!.body;
    const one = await ai.embeddings.create({ model: 'embed-a', input: [101, 202, 303], encoding_format: 'float' });
    assert.equal(one.data.length, 1, 'one list of token ids is one input');
    assert.deepEqual(seen().input, [101, 202, 303], 'token ids reach the upstream untouched');
    assert.equal(one.usage.prompt_tokens, 3);
    const two = await ai.embeddings.create({
      model: 'embed-a',
      input: [
        [1, 2],
        [3, 4, 5],
      ],
      dimensions: 4,
      encoding_format: 'float',
    });
    assert.deepEqual(
      two.data.map((d) => [d.index, d.embedding.length]),
      [
        [0, 4],
        [1, 4],
      ],
    );
    assert.deepEqual(seen().input, [
      [1, 2],
      [3, 4, 5],
    ]);
    assert.equal(two.usage.prompt_tokens, 5);
    const text = await ai.embeddings.create({ model: 'embed-a', input: 'a single text' });
    assert.equal(text.data.length, 1);

    // Where the upstream's usage is unusable, token ids are their own count (texts go through our tokenizer).
    up.next({ usage: { prompt_tokens: -4, total_tokens: -4 } });
    const counted = await call(gw.url, 'POST', '/v1/embeddings', { token: u.key, body: { model: 'embed-a', input: [[7, 8, 9, 10], [11]] } });
    assert.equal(counted.status, 200, counted.text);
    assert.equal(counted.body.usage.prompt_tokens, 5);

    const cases: [unknown, number, string][] = [
      [[], 400, 'missing_input'],
      [[[]], 400, 'missing_input'],
      [[1, 'a'], 400, 'invalid_request'],
      [[-1], 400, 'invalid_request'],
      [[1.5], 400, 'invalid_request'],
      [[[1], 'a'], 400, 'invalid_request'],
    ];
    const calls = up.calls('/v1/embeddings').length;
    for (const [input, status, code] of cases) {
      const r = await call(gw.url, 'POST', '/v1/embeddings', { token: u.key, body: { model: 'embed-a', input } });
      assert.equal(r.status, status, `${JSON.stringify(input)} → ${r.text}`);
      assert.equal(r.body.error.code, code, r.text);
      assert.match(r.body.error.param, /^input/);
    }
    assert.equal(up.calls('/v1/embeddings').length, calls, 'no invalid input reached the upstream');
    const long = await call(gw.url, 'POST', '/v1/embeddings', {
      token: u.key,
      body: {
        model: 'embed-small',
        input: [
          [1, 2, 3],
          [1, 2, 3, 4, 5],
        ],
      },
    });
    assert.equal(long.status, 400, long.text);
    assert.equal(long.body.error.code, 'context_length_exceeded');
  });

  it('fails over from a dead route, and answers 503 model_unavailable / model_misconfigured without leaking upstreams', async () => {
    const u = await fundedUser(gw);
    const ok = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'chat-failover', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(ok.status, 200, ok.text);
    const dead = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'chat-dead', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(dead.status, 503);
    assert.equal(dead.body.error.code, 'model_unavailable');
    const nokey = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'chat-nokey', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(nokey.status, 503);
    assert.equal(nokey.body.error.code, 'model_misconfigured');
    for (const r of [dead, nokey]) {
      assert.ok(!r.text.includes('127.0.0.1') && !r.text.includes('sk-upstream-secret') && !r.text.includes('NO_SUCH_VARIABLE'), r.text);
    }
    // Nothing was charged for calls no route served.
    const before = await wallet(gw, u.token);
    await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'chat-dead', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal((await wallet(gw, u.token)).balance_cents, before.balance_cents);
  });

  it("relays an upstream's rejection without its model id, provider or host (the spec hides upstreams)", async () => {
    const u = await fundedUser(gw);
    up.next({ status: 400, message: `The model 'gpt-up' does not support this on OpenAI (api.openai.com, ${up.url.replace('http://', '')}).` });
    const openai = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'chat-a', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(openai.status, 400, openai.text);
    assert.equal(openai.body.error.code, 'invalid_request');
    assert.match(openai.body.error.message, /The model 'chat-a' does not support this on upstream/);
    anthropic.next({ status: 400, message: 'prompt is too long for claude-up: 300000 tokens > 200000 maximum (Anthropic)' });
    const claude = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'claude', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(claude.status, 400, claude.text);
    assert.equal(claude.body.error.code, 'context_length_exceeded');
    assert.match(claude.body.error.message, /prompt is too long for claude: 300000 tokens/);
    for (const r of [openai, claude]) {
      assert.doesNotMatch(r.body.error.message, /gpt-up|claude-up|openai|anthropic|127\.0\.0\.1/i, r.body.error.message);
    }
  });

  it('validates with the spec codes', async () => {
    const u = await fundedUser(gw);
    const cases: [Record<string, unknown>, number, string, string?][] = [
      [{ messages: [{ role: 'user', content: 'x' }] }, 400, 'missing_input', 'model'],
      [{ model: 'chat-a' }, 400, 'missing_input', 'messages'],
      [{ model: 'chat-a', messages: [] }, 400, 'missing_input', 'messages'],
      [{ model: 'chat-a', messages: [{ role: 'tool', content: 'x' }] }, 400, 'invalid_message_role', 'messages.0.role'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], temperature: 2.5 }, 400, 'invalid_request', 'temperature'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], top_p: 1.5 }, 400, 'invalid_request', 'top_p'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], stop: ['a', 'b', 'c', 'd', 'e'] }, 400, 'invalid_request', 'stop'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], n: 0 }, 400, 'invalid_request', 'n'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], max_tokens: 0 }, 400, 'invalid_request', 'max_tokens'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], max_tokens: 600 }, 400, 'invalid_request', 'max_tokens'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], temperature: '1' }, 400, 'invalid_request', 'temperature'],
      [{ model: 'nope', messages: [{ role: 'user', content: 'x' }] }, 404, 'model_not_found', 'model'],
      [{ model: 'embed-a', messages: [{ role: 'user', content: 'x' }] }, 404, 'model_not_found', 'model'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'word '.repeat(5000) }] }, 400, 'context_length_exceeded', 'messages'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], tools: [] }, 400, 'invalid_request', 'tools'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], presence_penalty: 2.5 }, 400, 'invalid_request', 'presence_penalty'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], frequency_penalty: -3 }, 400, 'invalid_request', 'frequency_penalty'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], seed: 1.5 }, 400, 'invalid_request', 'seed'],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'xml' } }, 400, 'invalid_request', 'response_format.type'],
      [
        { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema', json_schema: { name: 'has space' } } },
        400,
        'invalid_request',
        'response_format.json_schema.name',
      ],
      [
        { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'json_schema' } },
        400,
        'missing_input',
        'response_format.json_schema',
      ],
      [
        { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'text', json_schema: { name: 'a' } } },
        400,
        'invalid_request',
        'response_format.json_schema',
      ],
      [{ model: 'chat-a', messages: [{ role: 'user', content: 'x' }], max_completion_tokens: 600 }, 400, 'invalid_request', 'max_completion_tokens'],
      [
        { model: 'chat-a', messages: [{ role: 'user', content: 'x' }], max_tokens: 10, max_completion_tokens: 20 },
        400,
        'invalid_request',
        'max_completion_tokens',
      ],
    ];
    const before = up.calls('/v1/chat/completions').length;
    for (const [body, status, code, param] of cases) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body });
      assert.equal(r.status, status, `${JSON.stringify(body).slice(0, 80)} → ${r.text}`);
      assert.equal(r.body.error.code, code, r.text);
      if (param) assert.equal(r.body.error.param, param, r.text);
      if (param === 'response_format.type') assert.match(r.body.error.message, /must be one of "text", "json_object", "json_schema"/);
    }
    assert.equal(up.calls('/v1/chat/completions').length, before, 'no invalid request reached the upstream');
  });

  it('bills the exact cost from reported usage, in fractions of a cent, and refuses an empty wallet with 402', async () => {
    const u = await fundedUser(gw, 1);
    const r = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: u.key,
      body: { model: 'chat-a', messages: [{ role: 'user', content: 'tell me about rivers' }], max_tokens: 16 },
    });
    assert.equal(r.status, 200, r.text);
    const cost = r.body.usage.prompt_tokens * PRICING.input_cents_per_mtok + r.body.usage.completion_tokens * PRICING.output_cents_per_mtok; // µ¢
    const w = await wallet(gw, u.token);
    assert.equal(w.balance_cents, Math.floor((1_000_000 - cost) / 1_000_000));

    const broke = await signup(gw.url);
    const k = await createKey(gw.url, broke.token);
    const denied = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: k.api_key,
      body: { model: 'chat-a', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(denied.status, 402);
    assert.equal(denied.body.error.code, 'insufficient_credit');
    assert.equal(denied.body.error.type, 'insufficient_quota');
  });

  it("the prompt's bytes bound its tokens; the exact count decides only near the context window or the wallet's end", async () => {
    // Input at 2,000 µ¢ a token: 200 words hold ~0.42 cent counted exactly, ~2 cents by their bytes.
    await putModel(gw, 'chat-dear-input', [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-secret', upstream_model: 'gpt-up' }], {
      pricing: { input_cents_per_mtok: 2000, output_cents_per_mtok: 600 },
    });
    const u = await fundedUser(gw, 1);
    const ask = (words: number, model = 'chat-dear-input', key = u.key) =>
      call(gw.url, 'POST', '/v1/chat/completions', {
        token: key,
        body: { model, messages: [{ role: 'user', content: 'word '.repeat(words) }], max_tokens: 16 },
      });
    const fits = await ask(200);
    assert.equal(fits.status, 200, `a wallet that covers the exact estimate is not refused for the bound's: ${fits.text}`);
    const tooDear = await ask(600);
    assert.equal(tooDear.status, 402, tooDear.text);
    assert.equal(tooDear.body.error.code, 'insufficient_credit');
    assert.match(tooDear.body.error.message, /may cost up to 2 cents/, 'the refusal names the exact estimate (~1.2 cents), not the bound (~6 cents)');
    const w = await wallet(gw, u.token);
    assert.equal(
      w.balance_microcents,
      1_000_000 - (fits.body.usage.prompt_tokens * 2000 + fits.body.usage.completion_tokens * 600),
      'charged the exact cost once; the refused call held nothing',
    );

    // chat-a's window is 4,096 tokens, 512 of them for the answer: 900 words are 4,500 bytes but ~900 tokens.
    const rich = await fundedUser(gw);
    const near = await ask(900, 'chat-a', rich.key);
    assert.equal(near.status, 200, near.text);
    const over = await ask(5000, 'chat-a', rich.key);
    assert.equal(over.status, 400, over.text);
    assert.match(over.body.error.message, /the messages take 50\d\d and max_tokens asks for 16\./, 'the refusal names the exact count, not the 25,000 bytes');

    // Special tokens' text is prompt text like any other (our count runs where the upstream's usage is unusable).
    up.next({ usage: { prompt_tokens: -1, completion_tokens: -1, total_tokens: -2 } });
    const special = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: rich.key,
      body: { model: 'chat-a', messages: [{ role: 'user', content: 'say <|endoftext|> twice' }], max_tokens: 16 },
    });
    assert.equal(special.status, 200, special.text);
    assert.ok(special.body.usage.prompt_tokens > 3, JSON.stringify(special.body.usage));
  });

  it('a mid-stream upstream failure ends the stream with an error event and bills only what was received', async () => {
    const u = await fundedUser(gw);
    up.next({ closeAfterChunks: 3 });
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-a', messages: [{ role: 'user', content: 'tell me a long story about the sea and the rivers' }], stream: true }),
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((e) => e.replace(/^data: /, ''));
    assert.ok(!events.includes('[DONE]'), 'no [DONE] after a failure');
    const last = JSON.parse(events.at(-1)!);
    assert.equal(last.error.code, 'model_unavailable');
    const content = events
      .slice(0, -1)
      .map((e) => JSON.parse(e))
      .map((c) => c.choices[0]?.delta.content ?? '')
      .join('');
    assert.ok(content.length > 0, 'some content arrived before the failure');
  });

  it('a client that disconnects mid-stream aborts the upstream promptly', async () => {
    const u = await fundedUser(gw);
    up.next({ chunkDelayMs: 200 });
    const controller = new AbortController();
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      signal: controller.signal,
      headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'chat-a',
        messages: [{ role: 'user', content: 'tell me a very long story about the sea and all the rivers of the world' }],
        stream: true,
      }),
    });
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk arrived
    const upstreamCall = up.calls('/v1/chat/completions').at(-1)!;
    const t0 = Date.now();
    controller.abort();
    await Promise.race([upstreamCall.ended, new Promise((_, rej) => setTimeout(() => rej(new Error('upstream not aborted within 2 s')), 2000))]);
    assert.ok(upstreamCall.closedEarly, 'the upstream connection was closed before the answer finished');
    assert.ok(Date.now() - t0 < 2000);
  });
});

describe("peers' recorded billing failures, through HTTP", () => {
  let gw: TestGateway;
  let up: FakeServer;
  before(async () => {
    up = await startOpenAIUpstream();
    gw = await startTestGateway();
    await putModel(gw, 'chat-bill', [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'gpt-up' }]);
    await putModel(gw, 'chat-pricey', [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'gpt-up' }], { pricing: FRACTIONAL });
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  const records = async (token: string) => {
    const out: any[] = [];
    let after: string | null = null;
    do {
      const page: any = (await call(gw.url, 'GET', `/portal/usage/records?limit=100${after ? `&after=${after}` : ''}`, { token })).body;
      out.push(...page.data);
      after = page.has_more ? page.next_after : null;
    } while (after);
    return out;
  };
  const settleUsage = async (token: string, n: number) => {
    // Usage records may trail by a bounded window: wait for them.
    for (let i = 0; i < 100; i++) {
      const r = await records(token);
      if (r.length >= n) return r;
      await new Promise((res) => setTimeout(res, 50));
    }
    return records(token);
  };

  it('streamed spend is recorded and debited, not zero (LiteLLM #37924)', async () => {
    const u = await fundedUser(gw, 100);
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-bill', messages: [{ role: 'user', content: 'tell me about the rivers of the world' }], stream: true }),
    });
    assert.ok((await res.text()).includes('[DONE]'));
    const [rec] = await settleUsage(u.token, 1);
    assert.ok(rec, 'a usage record exists');
    assert.ok(rec.completion_tokens > 0 && rec.cost_microcents > 0, JSON.stringify(rec));
    assert.equal(rec.model, 'chat-bill');
    assert.equal(rec.key_prefix, u.prefix);
    assert.equal(rec.route, 'chat-bill#0');
    const expected = rec.prompt_tokens * PRICING.input_cents_per_mtok + rec.completion_tokens * PRICING.output_cents_per_mtok;
    assert.equal(rec.cost_microcents, expected);
    const w = await wallet(gw, u.token);
    assert.equal(w.balance_cents, Math.floor((100 * 1_000_000 - expected) / 1_000_000));
  });

  it('200 concurrent calls on a small wallet never overspend it (LiteLLM #34732)', async () => {
    // Each call holds prompt + max_tokens (512) at 600 µ¢/token ≈ 0.31 cents, and costs ≈ 0.006 cents:
    // 1 cent fits 3 holds at once and ~160 calls in all, so some of 200 must be refused.
    const u = await fundedUser(gw, 1);
    const results = await Promise.all(
      Array.from({ length: 200 }, () =>
        call(gw.url, 'POST', '/v1/chat/completions', { token: u.key, body: { model: 'chat-bill', messages: [{ role: 'user', content: 'hello rivers' }] } }),
      ),
    );
    const ok = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 402).length;
    assert.equal(ok + refused, 200, results.map((r) => r.status).join(','));
    assert.ok(ok > 0 && refused > 0, `ok ${ok}, refused ${refused}`);
    const w = await wallet(gw, u.token);
    assert.ok(w.balance_cents >= 0, `balance ${w.balance_cents}`);
    const recs = (await settleUsage(u.token, ok)).filter((r) => r.status === 'ok');
    const spent = recs.reduce((s, r) => s + r.cost_microcents, 0);
    assert.equal(recs.length, ok);
    assert.ok(spent <= 1_000_000, `spent ${spent} µ¢ of 1 cent`);
    assert.equal(w.balance_microcents, 1_000_000 - spent, 'the wallet moved by exactly the recorded costs');
  });

  it('absurd upstream usage (negative, or beyond the hold) is not billed: our own count is', async () => {
    const u = await fundedUser(gw, 100);
    up.next(
      { usage: { prompt_tokens: -5, completion_tokens: 3, total_tokens: -2 } },
      { usage: { prompt_tokens: 10, completion_tokens: 900_000_000, total_tokens: 900_000_010 } },
    );
    for (let i = 0; i < 2; i++) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: u.key,
        body: { model: 'chat-bill', messages: [{ role: 'user', content: 'tell me about rivers' }], max_tokens: 20 },
      });
      assert.equal(r.status, 200, r.text);
      assert.ok(r.body.usage.prompt_tokens > 0 && r.body.usage.completion_tokens > 0 && r.body.usage.completion_tokens <= 20, JSON.stringify(r.body.usage));
    }
    const recs = await settleUsage(u.token, 2);
    for (const rec of recs) assert.ok(rec.completion_tokens <= 20 && rec.cost_microcents < 20_000, JSON.stringify(rec));
    const w = await wallet(gw, u.token);
    assert.ok(w.balance_cents >= 99, `balance ${w.balance_cents}`);
  });

  it('over many calls, the wallet debit equals the sum of exact costs to within one cent', async () => {
    const u = await fundedUser(gw, 1000);
    for (let i = 0; i < 60; i++) {
      const r = await call(gw.url, 'POST', '/v1/chat/completions', {
        token: u.key,
        body: { model: 'chat-pricey', messages: [{ role: 'user', content: `question number ${i} about rivers` }], max_tokens: 8 + (i % 7) },
      });
      assert.equal(r.status, 200, r.text);
    }
    const recs = await settleUsage(u.token, 60);
    const exact =
      recs.reduce((s, r) => s + (r.prompt_tokens * FRACTIONAL.input_cents_per_mtok + r.completion_tokens * FRACTIONAL.output_cents_per_mtok), 0) / 1_000_000;
    const w = await wallet(gw, u.token);
    const debited = 1000 - w.balance_cents; // whole cents shown; the µ¢ remainder is carried
    assert.ok(Math.abs(debited - exact) < 1, `debited ${debited} cents, exact ${exact} cents`);
    assert.ok(exact > 1, 'the test spends more than a cent, so the check means something');
  });
});
