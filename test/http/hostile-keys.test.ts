// Hostile keys and labels. Every route that takes an id, a name or a label, or an object with keys
// of the caller's choosing, is sent Object.prototype's names, NUL, unpaired surrogates and 10k-char
// strings, as values and as keys. None may get a 5xx; an id-like field with a NUL or an unpaired
// surrogate is a 400 naming it; and afterwards Object.prototype has gained nothing and ordinary
// requests still work (a "__proto__" group once polluted it, and every JSON body was then refused).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type Res, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { toyShopPack } from '../intent/toy-shop.ts';

const PROTO_NAMES = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf', '__defineGetter__'];
/** Strings no store keeps as given: NUL forges LMDB keys; an unpaired surrogate becomes U+FFFD. */
const MALFORMED = ['a\u0000b', 'a\ud800', '\udc00z', 'x\ud800\ud800'];
const LONG = 'k'.repeat(10_000);
const VALUES = [...PROTO_NAMES, ...MALFORMED, LONG];

/** A path segment for `v`: percent-encoded UTF-8, or for an unpaired surrogate its (invalid) WTF-8 bytes. */
function segment(v: string): string {
  try {
    return encodeURIComponent(v);
  } catch {
    return v.replace(
      /[\ud800-\udfff]/g,
      (c) => `%${[0xe0 | (c.charCodeAt(0) >> 12), 0x80 | ((c.charCodeAt(0) >> 6) & 63), 0x80 | (c.charCodeAt(0) & 63)].map((b) => b.toString(16)).join('%')}`,
    );
  }
}

/** A request with `v` in one field; `param` is the field a 400 must name. */
interface Case {
  what: string;
  method: string;
  path: (v: string) => string;
  token: () => string;
  body?: (v: string) => unknown;
  param: string;
  /** A 10k string is within this field's limit. */
  longOk?: boolean;
  /** The value is a path segment. */
  inPath?: boolean;
}

describe('hostile keys and labels', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let user: { id: number; token: string };
  let apiKey: string;
  let keyId: number;
  const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).sort();

  before(async () => {
    up = await startOpenAIUpstream();
    gw = await startTestGateway();
    user = await signup(gw.url);
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: 100_000 } });
    const k = await createKey(gw.url, user.token);
    apiKey = k.api_key;
    keyId = k.id;
    const route = { provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'u' };
    const chat = await call(gw.url, 'PUT', '/admin/models/chat-k', {
      token: ADMIN_TOKEN,
      body: { type: 'llm', owned_by: 't', pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 }, routes: [route] },
    });
    assert.equal(chat.status, 201, chat.text);
    await call(gw.url, 'PUT', '/admin/models/emb-k', {
      token: ADMIN_TOKEN,
      body: { type: 'embedding', owned_by: 't', pricing: { input_cents_per_mtok: 1 }, routes: [{ ...route, upstream_model: 'e' }] },
    });
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  const understand = (session_id: string) =>
    call(gw.url, 'POST', '/v1/understand', { token: apiKey, body: { model: 'intent-demo', session_id, text: 'paise nahi nikle' } });

  /** No 5xx, and every refusal in the envelope (or the bare 429 body). */
  function assertAnswered(res: Res, where: string): void {
    assert.ok(res.status < 500, `${where} → ${res.status} ${res.text.slice(0, 300)}`);
    if (res.status >= 400) {
      const ok = typeof res.body?.error?.code === 'string' || (res.status === 429 && typeof res.body?.detail === 'string');
      assert.ok(ok, `${where} → ${res.status} not in the envelope: ${res.text.slice(0, 200)}`);
    }
  }

  const valueCases = (): Case[] => {
    const v1 = (path: string, body: (v: string) => unknown, param: string, longOk = false): Case => ({
      what: `${path} ${param}`,
      method: 'POST',
      path: () => path,
      token: () => apiKey,
      body,
      param,
      longOk,
    });
    const admin = (method: string, path: (v: string) => string, body: ((v: string) => unknown) | undefined, param: string): Case => ({
      what: `${method} ${path('ID')} ${param}`,
      method,
      path,
      token: () => ADMIN_TOKEN,
      body,
      param,
      inPath: path('a') !== path('b'),
    });
    const portal = (method: string, path: string, body: (v: string) => unknown, param: string): Case => ({
      what: `${method} ${path} ${param}`,
      method,
      path: () => path,
      token: () => user.token,
      body,
      param,
    });
    const msg = [{ role: 'user', content: 'hi' }];
    const turn = (over: Record<string, string>) => ({ turns: [{ text: 'ATM se paise nahi nikle', expected: 'OUT_OF_SCOPE', ...over }] });
    return [
      v1('/v1/understand', (v) => ({ model: 'intent-demo', session_id: v, text: 'hello' }), 'session_id'),
      v1('/v1/understand', (v) => ({ model: v, session_id: 's', text: 'hello' }), 'model'),
      v1('/v1/understand', (v) => ({ model: 'intent-demo', session_id: 's', text: 'hello', language: v }), 'language'),
      v1('/v1/understand', (v) => ({ model: 'intent-demo', session_id: 's', text: v }), 'text'),
      v1('/v1/chat/completions', (v) => ({ model: v, messages: msg }), 'model'),
      v1('/v1/chat/completions', (v) => ({ model: 'chat-k', messages: msg, user: v }), 'user'),
      v1('/v1/chat/completions', (v) => ({ model: 'chat-k', messages: msg, safety_identifier: v }), 'safety_identifier'),
      v1('/v1/chat/completions', (v) => ({ model: 'chat-k', messages: msg, prompt_cache_key: v }), 'prompt_cache_key'),
      v1('/v1/chat/completions', (v) => ({ model: 'chat-k', messages: [{ role: 'user', content: 'hi', name: v }] }), 'messages.0.name'),
      v1('/v1/embeddings', (v) => ({ model: v, input: 'hi' }), 'model'),
      v1('/v1/embeddings', (v) => ({ model: 'emb-k', input: 'hi', user: v }), 'user'),
      { what: 'GET /v1/models/:model', method: 'GET', path: (v) => `/v1/models/${segment(v)}`, token: () => apiKey, param: 'model', inPath: true },
      portal('POST', '/portal/keys', (v) => ({ name: v }), 'name'),
      portal('POST', '/portal/keys', (v) => ({ name: 'n', expires_at: v }), 'expires_at'),
      { ...portal('PATCH', '/portal/keys/ID', (v) => ({ name: v }), 'name'), path: () => `/portal/keys/${keyId}` },
      portal('POST', '/portal/org/members', (v) => ({ email: v, role: 'member' }), 'email'),
      portal('POST', '/portal/webhooks', (v) => ({ url: v, events: ['topup'] }), 'url'),
      {
        what: 'POST /portal/auth/login email',
        method: 'POST',
        path: () => '/portal/auth/login',
        token: () => '',
        body: (v) => ({ email: v, password: 'correct horse battery' }),
        param: 'email',
      },
      admin(
        'PUT',
        (v) => `/admin/models/${segment(v)}`,
        () => ({ type: 'llm', owned_by: 't', pricing: { input_cents_per_mtok: 1 }, routes: [] }),
        'id',
      ),
      admin(
        'PUT',
        () => '/admin/models/m-k',
        (v) => ({ type: 'llm', owned_by: v, pricing: { input_cents_per_mtok: 1 }, routes: [] }),
        'owned_by',
      ),
      admin(
        'PUT',
        () => '/admin/models/m-k',
        (v) => ({ type: 'tts', owned_by: 't', voices: [v], pricing: { cents_per_1k_chars: 1 }, routes: [] }),
        'voices.0',
      ),
      admin(
        'PUT',
        () => '/admin/models/m-k',
        (v) => ({
          type: 'llm',
          owned_by: 't',
          pricing: { input_cents_per_mtok: 1 },
          routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', upstream_model: v }],
        }),
        'routes.0.upstream_model',
      ),
      admin('GET', (v) => `/admin/models/${segment(v)}`, undefined, 'id'),
      admin(
        'PUT',
        () => `/admin/access/user/${user.id}`,
        (v) => ({ models: ['chat-k', v] }),
        'models.1',
      ),
      admin(
        'PUT',
        () => `/admin/subscriptions/user/${user.id}`,
        (v) => ({ plan: v }),
        'plan',
      ),
      admin('GET', (v) => `/admin/actors/intent-session/${segment(v)}`, undefined, 'id'),
      admin('GET', (v) => `/admin/intent-packs/${segment(v)}`, undefined, 'id'),
      admin(
        'POST',
        () => '/admin/intent-packs/demo-banking-telecom/evaluate',
        (v) => turn({ group: v }),
        'turns.0.group',
      ),
      admin(
        'POST',
        () => '/admin/intent-packs/demo-banking-telecom/evaluate',
        (v) => turn({ expected: v }),
        'turns.0.expected',
      ),
      admin(
        'POST',
        () => '/admin/intent-packs/demo-banking-telecom/evaluate',
        (v) => turn({ text: v }),
        'turns.0.text',
      ),
    ];
  };

  it('answers every id, name and label with a 2xx or a 4xx; a NUL or an unpaired surrogate is a 400 naming the field', async () => {
    let sent = 0;
    for (const c of valueCases()) {
      for (const v of VALUES) {
        const path = c.path(v);
        const res = await call(gw.url, c.method, path, { token: c.token(), ...(c.body ? { body: c.body(v) } : {}) });
        sent++;
        const where = `${c.what} = ${JSON.stringify(v.slice(0, 20))}`;
        assertAnswered(res, where);
        const refused = MALFORMED.includes(v) || (v === LONG && !c.longOk);
        if (!refused) continue;
        assert.equal(res.status, 400, `${where} → ${res.status} ${res.text.slice(0, 200)}`);
        // A path the router cannot decode (unpaired surrogate) or cut (over 200 characters) is refused before any field is read.
        const routerRefused = c.inPath && (v === LONG || /[\ud800-\udfff]/.test(v));
        if (!routerRefused) assert.equal(res.body.error.param, c.param, `${where}: ${res.text.slice(0, 200)}`);
        assert.equal(res.body.error.code, 'invalid_request', where);
      }
    }
    assert.ok(sent >= 300, `sent ${sent}`);
    // The access case restricted the account to ['chat-k', <value>]: lift it for what follows.
    assert.equal((await call(gw.url, 'PUT', `/admin/access/user/${user.id}`, { token: ADMIN_TOKEN, body: { models: null } })).status, 200);
  });

  it('answers objects keyed by the caller with hostile keys with a 2xx or a 4xx', async () => {
    const pack = { ...toyShopPack(), id: undefined };
    const intents = pack.intents;
    const withKey = (k: string) => JSON.parse(`{${JSON.stringify(k)}: 1}`) as Record<string, number>;
    const cases: [string, string, string, (k: string) => unknown][] = [
      [
        'POST',
        '/v1/chat/completions',
        apiKey,
        (k) => ({
          model: 'chat-k',
          messages: [{ role: 'user', content: 'hi' }],
          response_format: { type: 'json_schema', json_schema: { name: 'r', schema: { type: 'object', properties: { [k]: { type: 'string' } }, [k]: true } } },
        }),
      ],
      ['POST', '/v1/chat/completions', apiKey, (k) => ({ model: 'chat-k', messages: [{ role: 'user', content: 'hi' }], logit_bias: withKey(k) })],
      ['POST', '/portal/keys', user.token, (k) => ({ name: 'n', ...withKey(k) })],
      ['PUT', '/admin/intent-packs/toy-k', ADMIN_TOKEN, (k) => ({ ...pack, intents: [{ ...intents[0], keywords: withKey(k) }, ...intents.slice(1)] })],
      [
        'PUT',
        '/admin/intent-packs/toy-k',
        ADMIN_TOKEN,
        (k) => ({ ...pack, intents: [{ ...intents[0], examples: { ...intents[0]!.examples, [k]: ['x'] } }, ...intents.slice(1)] }),
      ],
      [
        'PUT',
        '/admin/intent-packs/toy-k',
        ADMIN_TOKEN,
        (k) => ({ ...pack, responses: { R: { 'en-IN': { text: 'r', voice: 'r' }, [k]: { text: 'r', voice: 'r' } } } }),
      ],
      [
        'POST',
        '/admin/intent-packs/toy-k/evaluate',
        ADMIN_TOKEN,
        (k) => ({
          pack: { ...pack, intents: [{ ...intents[0], keywords: withKey(k) }, ...intents.slice(1)] },
          turns: [{ text: 'price of the mattress', expected: 'SHOP.PRICE', group: k }],
        }),
      ],
    ];
    for (const [method, path, token, body] of cases) {
      for (const k of VALUES) {
        // Computed keys and JSON.parse make own properties: "__proto__" is sent as a key.
        const raw = JSON.stringify(body(k));
        const res = await call(gw.url, method, path, { token, raw, headers: { 'content-type': 'application/json' } });
        assertAnswered(res, `${method} ${path} key ${JSON.stringify(k.slice(0, 20))}`);
      }
    }
    // A "__proto__" key anywhere in a body is refused by the parser.
    const proto = await call(gw.url, 'POST', '/portal/keys', {
      token: user.token,
      raw: '{"name": "n", "__proto__": {"turns": 1}}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(proto.status, 400);
    assert.equal(proto.body.error.code, 'invalid_json');
  });

  it('scores an evaluation grouped by "__proto__", "constructor" and the like, as groups', async () => {
    const turns = PROTO_NAMES.map((group) => ({ text: 'ATM se paise nahi nikle', expected: 'OUT_OF_SCOPE', group }));
    const res = await call(gw.url, 'POST', '/admin/intent-packs/demo-banking-telecom/evaluate', { token: ADMIN_TOKEN, body: { turns } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(Object.keys(res.body.by_group).sort(), [...PROTO_NAMES].sort());
    for (const g of PROTO_NAMES) assert.equal(Object.getOwnPropertyDescriptor(res.body.by_group, g)?.value.turns, 1, g);
  });

  it('session_id: a NUL or an unpaired surrogate is a 400 at once, every time, and the key goes on working', async () => {
    for (const session_id of ['a\u0000b', 'a\ud800b', 'a\ud800b', '\udfff']) {
      const started = Date.now();
      const res = await understand(session_id);
      assert.equal(res.status, 400, `${JSON.stringify(session_id)} → ${res.status} ${res.text.slice(0, 200)}`);
      assert.equal(res.body.error.code, 'invalid_request');
      assert.equal(res.body.error.param, 'session_id');
      assert.match(res.body.error.message, /^Invalid field 'session_id': must not contain control characters or unpaired surrogates\.$/);
      assert.ok(Date.now() - started < 2000, 'no wait for a lease');
    }
    const ok = await understand('a\ud83d\ude00b'); // a well-formed pair: an emoji
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.session_id, 'a\ud83d\ude00b');
  });

  it('leaves Object.prototype as it was, and ordinary requests still work', async () => {
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeBefore);
    assert.equal(({} as Record<string, unknown>).turns, undefined);
    const key = await call(gw.url, 'POST', '/portal/keys', { token: user.token, body: { name: 'after the storm' } });
    assert.equal(key.status, 201, key.text);
    const turn = await understand('s-after');
    assert.equal(turn.status, 200, turn.text);
    const chat = await call(gw.url, 'POST', '/v1/chat/completions', { token: apiKey, body: { model: 'chat-k', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(chat.status, 200, chat.text);
    const metrics = await call(gw.metricsUrl, 'GET', '/metrics');
    assert.equal(metrics.status, 200);
  });
});
