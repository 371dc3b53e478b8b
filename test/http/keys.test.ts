// API keys: format, retrieval, revocation on the next request, expiry, scopes, forged tokens,
// other accounts' keys, and per-key limits set by the owner and by an administrator.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway, inOneRateWindow } from '../helper.ts';

describe('API keys', () => {
  let gw: TestGateway;
  let clock = Date.now();
  before(async () => {
    gw = await startTestGateway({}, { now: () => clock });
  });
  after(() => gw.destroy());

  it('creates sk-live- HS256 JWT keys carrying sub, jti and iat; the prefix identifies the key', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token, { name: 'prod' });
    assert.match(k.api_key, /^sk-live-eyJ[\w-]+\.[\w-]+\.[\w-]+$/);
    const jwt = k.api_key.slice('sk-live-'.length);
    assert.deepEqual(decodeProtectedHeader(jwt), { alg: 'HS256', typ: 'JWT' });
    const claims = decodeJwt(jwt);
    assert.equal(claims.sub, String(s.id));
    assert.match(String(claims.jti), /^[0-9a-f]{32}$/);
    assert.equal(typeof claims.iat, 'number');
    assert.equal(claims.exp, undefined);
    assert.match(k.prefix, /^sk-live-[0-9a-f]{12}$/);
    assert.ok(String(claims.jti).startsWith(k.prefix.slice(8)));
    assert.deepEqual(k.scopes, ['*']);
    const again = await createKey(gw.url, s.token, { name: 'prod' });
    assert.notEqual(again.api_key, k.api_key);
    assert.notEqual(again.prefix, k.prefix);
  });

  it('lists keys without secrets and returns the same full key at any time; the store holds no token', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token, { name: 'a', scopes: ['chat', 'models'] });
    const list = await call(gw.url, 'GET', '/portal/keys', { token: s.token });
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 1);
    assert.deepEqual(Object.keys(list.body.data[0]).sort(), [
      'cpd',
      'cpm',
      'created_at',
      'expires_at',
      'id',
      'last_used_at',
      'name',
      'prefix',
      'rpm',
      'scopes',
      'status',
      'tpd',
    ]);
    const one = await call(gw.url, 'GET', `/portal/keys/${k.id}`, { token: s.token });
    assert.equal(one.body.api_key, k.api_key);
    const doc = await gw.store.collection('api_keys').findOne({ _id: k.id });
    assert.ok(!JSON.stringify(doc).includes(k.api_key.slice(20)), 'the full token is not stored');
  });

  it('authenticates /v1 and revocation takes effect on the very next request', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    const ok = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
    assert.equal(ok.status, 200, ok.text);
    // The default config seeds three models: the demo intent model and the offline speech engines.
    assert.deepEqual(
      { ...ok.body, data: ok.body.data.map((m: { id: string }) => m.id) },
      { object: 'list', data: ['intent-demo', 'stt-local', 'tts-local', 'voice-local'] },
    );
    const del = await call(gw.url, 'DELETE', `/portal/keys/${k.id}`, { token: s.token });
    assert.equal(del.status, 200);
    assert.equal(del.body.status, 'revoked');
    const after = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
    assert.equal(after.status, 401);
    assert.equal(after.body.error.code, 'invalid_api_key');
  });

  it('after the first request finds a key by its _id, and still refuses it once the record stops matching or is gone', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    const keys = gw.store.collection<{ _id: number; jti: string }>('api_keys');
    assert.equal((await call(gw.url, 'GET', '/v1/models', { token: k.api_key })).status, 200);
    const doc = (await keys.findOne({ _id: k.id }))!;
    // The verified token now remembers the record's _id: a record with another jti is not its key.
    await keys.updateOne({ _id: k.id }, { $set: { jti: 'f'.repeat(32) } });
    assert.equal((await call(gw.url, 'GET', '/v1/models', { token: k.api_key })).status, 401);
    await keys.updateOne({ _id: k.id }, { $set: { jti: doc.jti } });
    assert.equal((await call(gw.url, 'GET', '/v1/models', { token: k.api_key })).status, 200);
    await keys.deleteOne({ _id: k.id });
    const gone = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
    assert.equal(gone.status, 401);
    assert.equal(gone.body.error.code, 'invalid_api_key');
  });

  it('rejects missing, malformed, forged and alg-swapped keys with 401 invalid_api_key', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    const jwt = k.api_key.slice(8);
    const [h, p] = jwt.split('.');
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const noneAlg = `sk-live-${b64({ alg: 'none', typ: 'JWT' })}.${p}.`;
    const otherSecret = `sk-live-${h}.${p}.${createHmac('sha256', 'x'.repeat(48)).update(`${h}.${p}`).digest('base64url')}`;
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const tamperedPayload = `sk-live-${h}.${b64({ ...claims, sub: '999' })}.${jwt.split('.')[2]}`;
    for (const header of [
      undefined,
      'Bearer',
      'Basic abc',
      `Bearer ${jwt}`,
      `Bearer ${noneAlg}`,
      `Bearer ${otherSecret}`,
      `Bearer ${tamperedPayload}`,
      'Bearer sk-live-garbage',
    ]) {
      const res = await fetch(gw.url + '/v1/models', { headers: header ? { authorization: header } : {} });
      const body = (await res.json()) as any;
      assert.equal(res.status, 401, String(header));
      assert.equal(body.error.code, 'invalid_api_key');
    }
  });

  it('an expired key → 401 authentication_error, and key_expired fires once', async () => {
    const s = await signup(gw.url);
    const expires = new Date(clock + 3_600_000).toISOString();
    const k = await createKey(gw.url, s.token, { name: 'short', expires_at: expires });
    assert.equal(decodeJwt(k.api_key.slice(8)).exp, Math.ceil(Date.parse(expires) / 1000));
    assert.equal((await call(gw.url, 'GET', '/v1/models', { token: k.api_key })).status, 200);
    clock += 3_600_001;
    for (let i = 0; i < 3; i++) {
      const res = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'invalid_api_key');
      assert.equal(res.body.error.type, 'authentication_error');
    }
    const fired = gw.events.filter((e) => e.event === 'key_expired' && e.fields.key_prefix === k.prefix);
    assert.equal(fired.length, 1);
    assert.deepEqual(fired[0]!.owner, { type: 'user', id: s.id });
    assert.equal(fired[0]!.fields.expired_at, expires);
    const listed = await call(gw.url, 'GET', '/portal/keys', { token: s.token });
    assert.equal(listed.body.data[0].status, 'expired');
  });

  it('refuses expires_at in the past or not ISO 8601 UTC, and unknown scopes', async () => {
    const s = await signup(gw.url);
    for (const expires_at of [new Date(clock - 1000).toISOString(), 'tomorrow', '2030-01-01', '2030-01-01T00:00:00+05:30']) {
      const r = await call(gw.url, 'POST', '/portal/keys', { token: s.token, body: { name: 'x', expires_at } });
      assert.equal(r.status, 400, expires_at);
      assert.equal(r.body.error.param, 'expires_at');
    }
    const r = await call(gw.url, 'POST', '/portal/keys', { token: s.token, body: { name: 'x', scopes: ['admin'] } });
    assert.equal(r.status, 400);
  });

  it('a key without the needed scope → 403 permission_error / permission_denied naming the scope', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token, { name: 'chat only', scopes: ['chat'] });
    const res = await call(gw.url, 'GET', '/v1/models', { token: k.api_key });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.type, 'permission_error');
    assert.equal(res.body.error.code, 'permission_denied');
    assert.match(res.body.error.message, /'models'/);
  });

  it("another account's keys are not reachable (404), whatever the verb", async () => {
    const a = await signup(gw.url);
    const b = await signup(gw.url);
    const k = await createKey(gw.url, a.token);
    for (const [m, body] of [['GET'], ['DELETE'], ['PATCH', { name: 'mine now' }]] as const) {
      const r = await call(gw.url, m, `/portal/keys/${k.id}`, { token: b.token, ...(body ? { body } : {}) });
      assert.equal(r.status, 404, m);
      assert.ok(!r.text.includes(k.api_key));
    }
    assert.equal((await call(gw.url, 'GET', '/v1/models', { token: k.api_key })).status, 200, 'still alive');
    assert.equal((await call(gw.url, 'GET', '/portal/keys', { token: b.token })).body.data.length, 0);
  });

  it('RPM counts every /v1 request on the key, GET /v1/models included (429 with the bare body)', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { rpm: 2 } });
    const statuses = [];
    await inOneRateWindow();
    for (let i = 0; i < 3; i++) statuses.push(await call(gw.url, 'GET', '/v1/models', { token: k.api_key }));
    assert.deepEqual(
      statuses.map((r) => r.status),
      [200, 200, 429],
    );
    assert.equal(typeof statuses[2]!.body.detail, 'string');
    assert.equal(statuses[2]!.headers.get('x-ratelimit-limit-rpm'), '2');
    assert.ok(Number(statuses[2]!.headers.get('retry-after')) > 0);
  });

  it('limits: the owner sets rpm/tpd/cpd/cpm; an administrator sets its own; the lower applies', async () => {
    const s = await signup(gw.url);
    const k = await createKey(gw.url, s.token);
    const p = await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { name: 'renamed', rpm: 100 } });
    assert.equal(p.status, 200, p.text);
    assert.equal(p.body.name, 'renamed');
    assert.equal(p.body.rpm, 100);
    const noAdmin = await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { body: { rpm: 10 } });
    assert.equal(noAdmin.status, 401);
    const ad = await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { rpm: 10, tpd: 5000 } });
    assert.equal(ad.status, 200, ad.text);
    assert.equal(ad.body.rpm, 10);
    assert.equal(ad.body.tpd, 5000);
    // The owner cannot lift the administrator's limit by removing their own.
    const lifted = await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { rpm: null } });
    assert.equal(lifted.body.rpm, 10);
    // The daily spend cap (cents) works the same way.
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { cpd: 500 } })).body.cpd, 500);
    assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { cpd: 200 } })).body.cpd, 200);
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { cpd: null } })).body.cpd, 200);
    assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { cpd: null } })).body.cpd, null);
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { cpm: 5000 } })).body.cpm, 5000);
    assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { cpm: 3000 } })).body.cpm, 3000);
    for (const rpm of [0, -1, 1.5, '10']) {
      assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: s.token, body: { rpm } })).status, 400, String(rpm));
    }
  });
});
