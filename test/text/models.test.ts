// Virtual models: administrator CRUD, validation, per-account availability, and GET /v1/models in
// the spec's shape, reflecting changes on the next request.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, joinOrg, signup, startTestGateway, type TestGateway } from '../helper.ts';

const llm = (over: Record<string, unknown> = {}) => ({
  type: 'llm',
  owned_by: 'acme',
  reasoning: true,
  context_window: 8192,
  max_output_tokens: 1024,
  pricing: { input_cents_per_mtok: 15, output_cents_per_mtok: 60.5 },
  routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: 'sk-upstream-secret', upstream_model: 'gpt-x' }],
  ...over,
});

describe('model catalog', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({
      models: [
        {
          id: 'seeded-embed',
          type: 'embedding',
          owned_by: 'seed',
          pricing: { input_cents_per_mtok: 2 },
          routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', upstream_model: 'e' }],
        },
      ],
    });
  });
  after(() => gw.destroy());

  it('creates (201), replaces (200), lists and deletes models; inline upstream keys never come back', async () => {
    const put = await call(gw.url, 'PUT', '/admin/models/chat-fast', { token: ADMIN_TOKEN, body: llm() });
    assert.equal(put.status, 201, put.text);
    assert.equal(put.body.routes[0].api_key, undefined);
    assert.equal(put.body.routes[0].api_key_set, true, 'the key is said to be set, never shown');
    assert.ok(!put.text.includes('sk-upstream-secret'));
    const again = await call(gw.url, 'PUT', '/admin/models/chat-fast', { token: ADMIN_TOKEN, body: llm({ owned_by: 'acme2' }) });
    assert.equal(again.status, 200);
    assert.equal(again.body.owned_by, 'acme2');
    assert.equal(again.body.created_at, put.body.created_at);
    const list = await call(gw.url, 'GET', '/admin/models', { token: ADMIN_TOKEN });
    assert.deepEqual(
      list.body.data.map((m: any) => m.id),
      ['chat-fast', 'seeded-embed'],
    );
    assert.deepEqual(
      list.body.data.map((m: any) => m.routes[0].api_key_set),
      [true, false],
    );
    assert.ok(!list.text.includes('sk-upstream-secret'));
    assert.equal((await call(gw.url, 'DELETE', '/admin/models/chat-fast', { token: ADMIN_TOKEN })).status, 200);
    assert.equal((await call(gw.url, 'DELETE', '/admin/models/chat-fast', { token: ADMIN_TOKEN })).status, 404);
    assert.equal((await call(gw.url, 'PUT', '/admin/models/x', { body: llm() })).status, 401);
  });

  it('refuses invalid definitions with the field named', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [llm({ routes: [] }), 'routes'],
      [llm({ routes: [{ provider: 'nope', base_url: 'http://x', upstream_model: 'm' }] }), 'routes.0.provider'],
      [llm({ routes: [{ provider: 'openai', base_url: 'not a url', upstream_model: 'm' }] }), 'routes.0.base_url'],
      [llm({ routes: [{ provider: 'openai', base_url: 'ftp://x', upstream_model: 'm' }] }), 'routes.0.base_url'],
      [llm({ pricing: { cents_per_minute: 1 } }), 'pricing.cents_per_minute'],
      [llm({ pricing: { input_cents_per_mtok: -1 } }), 'pricing.input_cents_per_mtok'],
      [llm({ pricing: { input_cents_per_mtok: 10, cached_input_cents_per_mtok: 11 } }), 'pricing.cached_input_cents_per_mtok'],
      [llm({ type: 'embedding', pricing: { input_cents_per_mtok: 10, cached_input_cents_per_mtok: 1 } }), 'pricing.cached_input_cents_per_mtok'],
      [llm({ type: 'video' }), 'type'],
      [llm({ max_output_tokens: 9000 }), 'max_output_tokens'],
      [llm({ surprise: 1 }), 'surprise'],
    ];
    for (const [body, param] of cases) {
      const r = await call(gw.url, 'PUT', '/admin/models/bad', { token: ADMIN_TOKEN, body });
      assert.equal(r.status, 400, `${param}: ${r.text}`);
      assert.equal(r.body.error.param, param, r.text);
    }
  });

  it('GET /v1/models lists active models in the spec shape and sees changes on the next request', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    await call(gw.url, 'PUT', '/admin/models/chat-a', { token: ADMIN_TOKEN, body: llm() });
    await call(gw.url, 'PUT', '/admin/models/stt-a', {
      token: ADMIN_TOKEN,
      body: {
        type: 'stt',
        owned_by: 'acme',
        languages: ['hi-IN', 'en-IN'],
        streaming: true,
        modes: ['transcribe', 'translate'],
        timestamps: 'word',
        jobs: true,
        diarization: true,
        pricing: { cents_per_minute: 0.5 },
        routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', upstream_model: 'w' }],
      },
    });
    await call(gw.url, 'PUT', '/admin/models/stt-b', {
      token: ADMIN_TOKEN,
      body: {
        type: 'stt',
        owned_by: 'acme',
        languages: ['en-IN'],
        pricing: { cents_per_minute: 0.5 },
        routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', upstream_model: 'w' }],
      },
    });
    const misplaced = await call(gw.url, 'PUT', '/admin/models/chat-modes', { token: ADMIN_TOKEN, body: { ...llm(), modes: ['transcribe'] } });
    assert.equal(misplaced.status, 400, 'stt fields on another type are refused');
    assert.equal(misplaced.body.error.param, 'modes');
    await call(gw.url, 'PUT', '/admin/models/tts-a', {
      token: ADMIN_TOKEN,
      body: {
        type: 'tts',
        owned_by: 'acme',
        voices: ['meera'],
        pricing: { cents_per_1k_chars: 1.5 },
        routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', upstream_model: 't' }],
      },
    });
    const res = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.object, 'list');
    const byId = Object.fromEntries(res.body.data.map((m: any) => [m.id, m]));
    assert.deepEqual(Object.keys(byId).sort(), ['chat-a', 'seeded-embed', 'stt-a', 'stt-b', 'tts-a']);
    const { created, ...chat } = byId['chat-a'];
    assert.equal(typeof created, 'number');
    assert.deepEqual(chat, { id: 'chat-a', object: 'model', owned_by: 'acme', type: 'llm', reasoning: true, tools: false });
    assert.deepEqual(byId['stt-a'].languages, ['hi-IN', 'en-IN']);
    assert.equal(byId['stt-a'].streaming, true);
    assert.deepEqual(
      [byId['stt-a'].modes, byId['stt-a'].timestamps, byId['stt-a'].jobs, byId['stt-a'].diarization],
      [['transcribe', 'translate'], 'word', true, true],
    );
    // What an stt model offers is always shown, defaults filled in.
    const { created: _c, ...sttB } = byId['stt-b'];
    assert.deepEqual(sttB, {
      id: 'stt-b',
      object: 'model',
      owned_by: 'acme',
      type: 'stt',
      languages: ['en-IN'],
      streaming: false,
      modes: ['transcribe'],
      timestamps: 'segment',
      jobs: false,
      diarization: false,
    });
    assert.deepEqual(byId['tts-a'].voices, ['meera']);
    assert.equal(byId['seeded-embed'].type, 'embedding');
    assert.ok(!res.text.includes('routes') && !res.text.includes('127.0.0.1') && !res.text.includes('pricing'), 'upstreams stay hidden');

    await call(gw.url, 'DELETE', '/admin/models/tts-a', { token: ADMIN_TOKEN });
    const next = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
    assert.ok(!next.body.data.some((m: any) => m.id === 'tts-a'));
  });

  it("GET /v1/models/{id} (OpenAI's retrieve) answers one active model, any type, ids with a slash too", async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    await call(gw.url, 'PUT', '/admin/models/retrieve-a', { token: ADMIN_TOKEN, body: llm() });
    const made = await call(gw.url, 'PUT', `/admin/models/${encodeURIComponent('acme/chat-2:v1')}`, { token: ADMIN_TOKEN, body: llm({ reasoning: false }) });
    assert.equal(made.status, 201, made.text);
    const one = await call(gw.url, 'GET', '/v1/models/retrieve-a', { token: k.api_key });
    assert.equal(one.status, 200, one.text);
    const { created, ...entry } = one.body;
    assert.equal(typeof created, 'number');
    assert.deepEqual(entry, { id: 'retrieve-a', object: 'model', owned_by: 'acme', type: 'llm', reasoning: true, tools: false });
    const embed = await call(gw.url, 'GET', '/v1/models/seeded-embed', { token: k.api_key });
    assert.equal(embed.body.type, 'embedding');
    for (const path of ['/v1/models/acme/chat-2:v1', `/v1/models/${encodeURIComponent('acme/chat-2:v1')}`]) {
      const r = await call(gw.url, 'GET', path, { token: k.api_key });
      assert.equal(r.status, 200, `${path}: ${r.text}`);
      assert.equal(r.body.id, 'acme/chat-2:v1');
    }
    // Unknown, or inactive on this account: the same 404, in the spec's envelope.
    await call(gw.url, 'PUT', `/admin/access/user/${s.id}`, { token: ADMIN_TOKEN, body: { models: ['seeded-embed'] } });
    for (const id of ['no-such-model', 'retrieve-a', 'acme%2Fnone']) {
      const r = await call(gw.url, 'GET', `/v1/models/${id}`, { token: k.api_key });
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.error.code, 'model_not_found');
      assert.equal(r.body.error.param, 'model');
    }
    assert.equal((await call(gw.url, 'GET', '/v1/models/seeded-embed', { token: k.api_key })).status, 200);
    assert.equal((await call(gw.url, 'GET', '/v1/models/retrieve-a')).status, 401);
  });

  it('an administrator restricts an account (user or organization) to a list', async () => {
    const solo = await signup(gw.url);
    const soloKey = await createKey(gw.url, solo.token);
    const owner = await signup(gw.url);
    const member = await signup(gw.url);
    const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Restricted' } });
    await joinOrg(gw.url, owner.token, member);
    const memberKey = await createKey(gw.url, member.token);
    await call(gw.url, 'PUT', '/admin/models/chat-b', { token: ADMIN_TOKEN, body: llm() });

    assert.equal((await call(gw.url, 'PUT', `/admin/access/org/${org.body.id}`, { token: ADMIN_TOKEN, body: { models: ['chat-b'] } })).status, 200);
    const seen = await call(gw.url, 'GET', '/v1/models', { token: memberKey.api_key });
    assert.deepEqual(
      seen.body.data.map((m: any) => m.id),
      ['chat-b'],
    );
    const soloSeen = await call(gw.url, 'GET', '/v1/models', { token: soloKey.api_key });
    assert.ok(soloSeen.body.data.length > 1, 'other accounts are unaffected');

    // Leaving the organization: the member's key now lists what the personal account sees.
    await call(gw.url, 'POST', '/portal/org/leave', { token: member.token });
    const after = await call(gw.url, 'GET', '/v1/models', { token: memberKey.api_key });
    assert.ok(after.body.data.length > 1);

    await call(gw.url, 'PUT', `/admin/access/user/${solo.id}`, { token: ADMIN_TOKEN, body: { models: [] } });
    assert.deepEqual((await call(gw.url, 'GET', '/v1/models', { token: soloKey.api_key })).body.data, []);
    await call(gw.url, 'PUT', `/admin/access/user/${solo.id}`, { token: ADMIN_TOKEN, body: { models: null } });
    assert.ok((await call(gw.url, 'GET', '/v1/models', { token: soloKey.api_key })).body.data.length > 1);
  });
});
