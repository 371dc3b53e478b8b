// Bad input never gets a 500: every field of a valid body, replaced by hostile values (wrong types,
// huge numbers, deep nesting, long strings, prototype keys), must get a 4xx in the error envelope
// (or the bare {detail} body of a 429), never a 5xx and never a hang.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const HOSTILE: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  '',
  '0',
  'x'.repeat(5000),
  [],
  [null],
  {},
  { $gt: '' },
  { __proto__x: 1 },
  [[[[[[[[[[]]]]]]]]]],
];

/**
 * Every field, nested ones too (inside objects and the first element of arrays, five levels
 * down), replaced by each hostile value, and dropped; plus an unexpected field.
 */
function mutations(body: Record<string, unknown>): Record<string, unknown>[] {
  const out: unknown[] = [];
  const walk = (value: unknown, rebuild: (v: unknown) => unknown, depth: number): void => {
    if (depth > 5 || value === null || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      if (value.length === 0) return;
      const at = (v: unknown) => rebuild([v, ...value.slice(1)]);
      for (const v of HOSTILE) out.push(at(v));
      walk(value[0], at, depth + 1);
      return;
    }
    const obj = value as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      const at = (v: unknown) => rebuild({ ...obj, [key]: v });
      for (const v of HOSTILE) out.push(at(v));
      const { [key]: _dropped, ...rest } = obj;
      out.push(rebuild(rest));
      walk(obj[key], at, depth + 1);
    }
  };
  walk(body, (v) => v, 0);
  out.push({ ...body, unexpected_field: 1 });
  return out as Record<string, unknown>[];
}

describe('hostile input never gets a 5xx', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let session: string;
  let apiKey: string;
  let keyId: number;

  before(async () => {
    up = await startOpenAIUpstream();
    gw = await startTestGateway();
    const r = await call(gw.url, 'PUT', '/admin/models/chat-h', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 't',
        context_window: 4096,
        pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'u' }],
      },
    });
    assert.equal(r.status, 201);
    await call(gw.url, 'PUT', '/admin/models/emb-h', {
      token: ADMIN_TOKEN,
      body: {
        type: 'embedding',
        owned_by: 't',
        pricing: { input_cents_per_mtok: 1 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'e' }],
      },
    });
    const s = await signup(gw.url);
    session = s.token;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100_000 } });
    const k = await createKey(gw.url, s.token);
    apiKey = k.api_key;
    keyId = k.id;
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  const cases = (): [string, string, () => string, Record<string, unknown>][] => [
    [
      'POST',
      '/v1/chat/completions',
      () => apiKey,
      { model: 'chat-h', messages: [{ role: 'user', content: 'hi' }], temperature: 1, max_tokens: 5, stop: ['x'], n: 1, stream: false },
    ],
    [
      'POST',
      '/v1/chat/completions',
      () => apiKey,
      {
        model: 'chat-h',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'answer in JSON' }] }],
        max_completion_tokens: 5,
        seed: 7,
        presence_penalty: 0.5,
        frequency_penalty: 0.5,
        response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object' }, strict: true } },
        stream: true,
        stream_options: { include_usage: true },
      },
    ],
    [
      'POST',
      '/v1/chat/completions',
      () => apiKey,
      {
        model: 'chat-h',
        messages: [{ role: 'user', content: 'hi' }],
        logprobs: true,
        top_logprobs: 2,
        logit_bias: { '42': -100 },
        verbosity: 'low',
        safety_identifier: 'end-user-1',
        user: 'u',
        prompt_cache_key: 'k',
      },
    ],
    ['POST', '/v1/embeddings', () => apiKey, { model: 'emb-h', input: 'hello', encoding_format: 'float', dimensions: 4 }],
    ['POST', '/v1/embeddings', () => apiKey, { model: 'emb-h', input: [[1, 2], [3]] }],
    ['POST', '/portal/keys', () => session, { name: 'k', scopes: ['chat'], expires_at: '2099-01-01T00:00:00Z' }],
    ['PATCH', '/portal/keys/ID', () => session, { name: 'n', rpm: 10, tpd: 1000 }],
    ['POST', '/portal/org', () => session, { name: 'Org' }],
    ['POST', '/portal/auth/login', () => '', { email: 'a@b.co', password: 'whatever password' }],
    [
      'PUT',
      '/admin/models/m-h',
      () => ADMIN_TOKEN,
      {
        type: 'llm',
        owned_by: 'o',
        pricing: { input_cents_per_mtok: 1 },
        routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', upstream_model: 'u' }],
      },
    ],
    ['POST', '/admin/topups', () => ADMIN_TOKEN, { user_id: 1, amount_cents: 5, reference: 'r' }],
  ];

  it('answers every mutated body with a 4xx (or 2xx) in the documented shape', async () => {
    let sent = 0;
    for (const [method, pathT, token, body] of cases()) {
      const path = pathT.replace('ID', String(keyId));
      for (const mutated of mutations(body)) {
        const res = await call(gw.url, method, path, { token: token(), body: mutated });
        sent++;
        const where = `${method} ${path} ${JSON.stringify(mutated).slice(0, 120)}`;
        assert.ok(res.status < 500, `${where} → ${res.status} ${res.text.slice(0, 200)}`);
        if (res.status >= 400) {
          const ok = typeof res.body?.error?.code === 'string' || (res.status === 429 && typeof res.body?.detail === 'string');
          assert.ok(ok, `${where} → ${res.status} not in the envelope: ${res.text.slice(0, 200)}`);
        }
      }
    }
    assert.ok(sent > 1000, `sent ${sent}`);
  });

  it('answers malformed raw bodies and headers with 4xx', async () => {
    const raws = [
      '{',
      'null',
      '[]',
      '"x"',
      '1',
      '{"model":"chat-h","messages":[{"role":"user","content":"hi"}]}garbage',
      '\u0000',
      '{"a":' + '['.repeat(100) + ']'.repeat(100) + '}',
    ];
    for (const raw of raws) {
      const res = await call(gw.url, 'POST', '/v1/chat/completions', { token: apiKey, raw, headers: { 'content-type': 'application/json' } });
      assert.ok(res.status >= 400 && res.status < 500, `${JSON.stringify(raw)} → ${res.status} ${res.text.slice(0, 200)}`);
      assert.equal(typeof res.body.error.code, 'string');
    }
    for (const auth of ['Bearer', 'Bearer ' + 'a'.repeat(10_000), 'Basic x', 'Bearer sk-live-a.b.c', 'Bearer sk-live-' + 'e'.repeat(3000)]) {
      const res = await call(gw.url, 'GET', '/v1/models', { headers: { authorization: auth } });
      assert.equal(res.status, 401, auth.slice(0, 40));
    }
  });
});
