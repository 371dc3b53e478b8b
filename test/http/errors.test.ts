// Every error, whatever its cause, is the spec's envelope with a stable code, the request id and an
// x-request-id header; bad input is never a 500 and never shows a stack trace.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { ApiError } from '../../src/errors.ts';
import { call, createKey, signup, startTestGateway, type Res, type TestGateway } from '../helper.ts';

function assertEnvelope(res: { status: number; headers: Headers; body: any; text: string }, status: number, code: string) {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  assert.equal(typeof res.body.error.message, 'string');
  assert.equal(typeof res.body.error.type, 'string');
  // OpenAI's Error requires `param` (nullable): always there, null when no field is at fault.
  assert.ok('param' in res.body.error && (res.body.error.param === null || typeof res.body.error.param === 'string'), `param always present: ${res.text}`);
  const rid = res.headers.get('x-request-id');
  assert.match(rid ?? '', /^req_[0-9a-f]{32}$/);
  assert.equal(res.body.error.request_id, rid);
  assert.doesNotMatch(res.text, /at .*\.ts:\d+|node_modules|stack/i);
}

describe('error envelope on bad input', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.destroy());

  it('unknown route → 404 not_found', async () => {
    assertEnvelope(await call(gw.url, 'GET', '/v1/nope'), 404, 'not_found');
    assertEnvelope(await call(gw.url, 'GET', '/portal/nothing/here'), 404, 'not_found');
  });

  it('no key, or a bad one → 401 invalid_api_key, param null', async () => {
    for (const token of [undefined, 'sk-live-nope']) {
      const res = await call(gw.url, 'GET', '/v1/models', token ? { token } : {});
      assertEnvelope(res, 401, 'invalid_api_key');
      assert.equal(res.body.error.param, null);
    }
  });

  it('known path, wrong method → 405 method_not_allowed with Allow', async () => {
    const res = await call(gw.url, 'PUT', '/portal/auth/login', { body: {} });
    assertEnvelope(res, 405, 'method_not_allowed');
    assert.equal(res.headers.get('allow'), 'POST');
    const res2 = await call(gw.url, 'POST', '/portal/keys/12');
    assertEnvelope(res2, 405, 'method_not_allowed');
    assert.deepEqual(res2.headers.get('allow')!.split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'PATCH']);
  });

  it('malformed JSON → 400 invalid_json', async () => {
    const res = await call(gw.url, 'POST', '/portal/auth/login', { raw: '{"email": ', headers: { 'content-type': 'application/json' } });
    assertEnvelope(res, 400, 'invalid_json');
  });

  it('empty JSON body → 400 invalid_json', async () => {
    assertEnvelope(await call(gw.url, 'POST', '/portal/auth/login', { raw: '', headers: { 'content-type': 'application/json' } }), 400, 'invalid_json');
  });

  it('an empty JSON body on a route that takes no body is no body: the route answers', async () => {
    const user = await signup(gw.url);
    const res = await call(gw.url, 'POST', '/portal/org/leave', { raw: '', token: user.token, headers: { 'content-type': 'application/json' } });
    assertEnvelope(res, 404, 'not_found');
  });

  it('deeply nested JSON is refused before parsing → 400 invalid_json', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const res = await call(gw.url, 'POST', '/portal/auth/login', { raw: deep, headers: { 'content-type': 'application/json' } });
    assertEnvelope(res, 400, 'invalid_json');
    assert.match(res.body.error.message, /nested deeper than 64/);
  });

  it('prototype poisoning → 400 invalid_json', async () => {
    const res = await call(gw.url, 'POST', '/portal/auth/login', {
      raw: '{"email":"a@b.co","password":"x","__proto__":{"admin":true}}',
      headers: { 'content-type': 'application/json' },
    });
    assertEnvelope(res, 400, 'invalid_json');
  });

  it('oversized body → 413 body_too_large', async () => {
    const res = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'a@b.co', password: 'x'.repeat(40_000) } });
    assertEnvelope(res, 413, 'body_too_large');
  });

  it('wrong content type → 415 unsupported_media_type', async () => {
    const res = await call(gw.url, 'POST', '/portal/auth/login', { raw: 'email=a', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    assertEnvelope(res, 415, 'unsupported_media_type');
  });

  it('missing field → 400 missing_input naming it', async () => {
    const res = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'a@b.co' } });
    assertEnvelope(res, 400, 'missing_input');
    assert.equal(res.body.error.param, 'password');
  });

  it('wrong types are not coerced → 400 invalid_request naming the field', async () => {
    const s = await signup(gw.url);
    for (const name of [123, true, ['x'], { a: 1 }]) {
      const res = await call(gw.url, 'POST', '/portal/org', { token: s.token, body: { name } });
      assertEnvelope(res, 400, 'invalid_request');
      assert.equal(res.body.error.param, 'name');
    }
    const res = await call(gw.url, 'POST', '/portal/org/transfer', { token: s.token, body: { user_id: '2' } });
    assertEnvelope(res, 400, 'invalid_request');
  });

  it('unknown fields are refused, not silently dropped (mass assignment)', async () => {
    const s = await signup(gw.url);
    const res = await call(gw.url, 'POST', '/portal/keys', { token: s.token, body: { name: 'k', user_id: 1 } });
    assertEnvelope(res, 400, 'invalid_request');
    assert.equal(res.body.error.param, 'user_id');
  });

  it('bad path parameter → 400, not 500', async () => {
    const s = await signup(gw.url);
    assertEnvelope(await call(gw.url, 'GET', '/portal/keys/abc', { token: s.token }), 400, 'invalid_request');
    assertEnvelope(await call(gw.url, 'GET', '/portal/keys/99999999999999999999', { token: s.token }), 400, 'invalid_request');
  });

  it("a path the router itself refuses (bad percent-encoding, an overlong segment) → 400 in our envelope, not fastify's", async () => {
    const s = await signup(gw.url);
    for (const path of ['/portal/keys/%E0%A4', '/v1/models/%ZZ', `/admin/models/${'a'.repeat(201)}`]) {
      const res = await call(gw.url, 'GET', path, { token: s.token });
      assertEnvelope(res, 400, 'invalid_request');
      assert.doesNotMatch(res.text, /FST_ERR/);
    }
  });

  it('quotes at most 100 characters of a value the client sent, cut with an ellipsis', async () => {
    const s = await signup(gw.url);
    const apiKey = (await createKey(gw.url, s.token)).api_key;
    const long = (c: string, n: number) => c.repeat(n);
    const cases: [string, Promise<Res>, number, string][] = [
      [
        'a model name',
        call(gw.url, 'POST', '/v1/chat/completions', { token: apiKey, body: { model: long('m', 200), messages: [{ role: 'user', content: 'hi' }] } }),
        404,
        'model_not_found',
      ],
      ['an unknown path', call(gw.url, 'GET', `/v1/${long('p', 8000)}`), 404, 'not_found'],
      [
        'a content type',
        call(gw.url, 'POST', '/portal/auth/login', { raw: 'x', headers: { 'content-type': `text/${long('t', 8000)}` } }),
        415,
        'unsupported_media_type',
      ],
      ['an unknown field', call(gw.url, 'POST', '/portal/keys', { token: s.token, body: { name: 'k', [long('f', 10_000)]: 1 } }), 400, 'invalid_request'],
    ];
    for (const [what, pending, status, code] of cases) {
      const res = await pending;
      assertEnvelope(res, status, code);
      const quoted = /([a-z])\1{20,}…?/.exec(res.body.error.message)?.[0] ?? '';
      assert.ok(quoted.endsWith('…') && quoted.length <= 101, `${what}: quoted ${quoted.length} characters: ${res.text.slice(0, 300)}`);
      assert.ok(res.text.length < 600, `${what}: a ${res.text.length}-character answer`);
      if (res.body.error.param !== null) assert.ok(res.body.error.param.length <= 101, `${what}: param of ${res.body.error.param.length} characters`);
    }
    // A quote that does not go through echo() is cut with the whole message, at 1,000 characters.
    assert.equal(new ApiError('invalid_request', `The value '${'v'.repeat(5000)}' is wrong.`).message.length, 1001);
  });

  it('a body that never finishes does not hang the server forever', async () => {
    // headersTimeout/requestTimeout are configured; here we only check the server keeps serving
    // other clients while one connection dribbles.
    const u = new URL(gw.url);
    const req = httpRequest({
      host: u.hostname,
      port: u.port,
      method: 'POST',
      path: '/portal/auth/login',
      headers: { 'content-type': 'application/json', 'content-length': '1000' },
    });
    req.on('error', () => undefined);
    req.write('{"email":');
    const res = await call(gw.url, 'GET', '/healthz');
    assert.equal(res.status, 200);
    req.destroy();
  });
});

describe('operational endpoints', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.destroy());

  it('healthz and readyz answer, with x-request-id', async () => {
    const h = await call(gw.url, 'GET', '/healthz');
    assert.equal(h.status, 200);
    assert.deepEqual(h.body, { status: 'ok' });
    assert.ok(h.headers.get('x-request-id'));
    const r = await call(gw.url, 'GET', '/readyz');
    assert.equal(r.status, 200);
    assert.equal(r.body.checks.store, 'ok');
    assert.equal(r.body.checks.actors, 'ok');
  });

  it('metrics count requests by route pattern and status', async () => {
    await call(gw.url, 'GET', '/portal/keys/7');
    await call(gw.url, 'GET', '/portal/keys/8');
    const m = await call(gw.metricsUrl, 'GET', '/metrics');
    assert.equal(m.status, 200);
    assert.match(m.headers.get('content-type') ?? '', /text\/plain/);
    assert.match(m.text, /gateway_http_requests_total\{method="GET",route="\/portal\/keys\/:id",status="401"\} 2/);
    assert.match(m.text, /gateway_http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/portal\/keys\/:id",status="401"\}/);
  });

  it('serves the OpenAPI document generated from the route schemas', async () => {
    const res = await call(gw.url, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    assert.equal(res.body.openapi, '3.1.0');
    const paths = Object.keys(res.body.paths);
    for (const p of ['/portal/auth/signup', '/portal/keys/{id}', '/portal/org/members/{user_id}', '/admin/actors/{kind}/{id}', '/v1/models']) {
      assert.ok(paths.includes(p), `missing ${p} in ${paths.join(',')}`);
    }
    const body = res.body.paths['/portal/keys'].post.requestBody.content['application/json'].schema;
    assert.deepEqual(body.required, ['name']);
    assert.equal(body.additionalProperties, false);
  });
});
