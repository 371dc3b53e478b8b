// Secrets never reach the log: passwords, session tokens, API keys (in headers or the api_key query
// parameter), upstream keys and webhook secrets, at the most verbose level, through a realistic
// session that also produces errors. Every line carries the request id.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.ts';
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

describe('logs carry no secrets', () => {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  let gw: TestGateway;
  let up: FakeServer;

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-upstream-very-secret-0001' });
    gw = await startTestGateway({ webhooks: { allowPrivateNetworks: true, allowHttp: true } }, { logger: createLogger('trace', sink) });
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  it('through sign-up, login, keys, chat (ok and failing), webhooks and bad input', async () => {
    const password = 'Pa55word-that-is-secret';
    const su = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'logs@example.com', password } });
    assert.equal(su.status, 201);
    const session = su.body.session_token as string;
    await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'logs@example.com', password: 'wrong-' + password } });
    const key = (await call(gw.url, 'POST', '/portal/keys', { token: session, body: { name: 'k' } })).body.api_key as string;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: su.body.user.id, amount_cents: 100 } });
    await call(gw.url, 'PUT', '/admin/models/log-chat', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 't',
        pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-upstream-very-secret-0001', upstream_model: 'u' }],
      },
    });
    await call(gw.url, 'PUT', '/admin/models/log-bad', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 't',
        pricing: { input_cents_per_mtok: 1 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-wrong-upstream-secret-0002', upstream_model: 'u' }],
      },
    });
    assert.equal(
      (await call(gw.url, 'POST', '/v1/chat/completions', { token: key, body: { model: 'log-chat', messages: [{ role: 'user', content: 'hi' }] } })).status,
      200,
    );
    const failed = await call(gw.url, 'POST', '/v1/chat/completions', { token: key, body: { model: 'log-bad', messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(failed.status, 503);
    await call(gw.url, 'GET', `/v1/models?api_key=${encodeURIComponent(key)}`);
    await call(gw.url, 'GET', '/v1/models', { token: key + 'x' });
    // An operator's look-up by e-mail: the address stays out of the access log's URL.
    const lookup = await call(gw.url, 'GET', `/admin/users?email=${encodeURIComponent('looked-up.person@example.com')}`, { token: ADMIN_TOKEN });
    assert.equal(lookup.status, 200, lookup.text);
    const hook = await call(gw.url, 'POST', '/portal/webhooks', { token: session, body: { url: 'http://127.0.0.1:9/hook', events: ['topup'] } });
    assert.equal(hook.status, 201, hook.text);
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: su.body.user.id, amount_cents: 5 } });
    await call(gw.url, 'POST', '/portal/keys', { token: session, raw: `{"name": "${password}"`, headers: { 'content-type': 'application/json' } });
    await new Promise((r) => setTimeout(r, 300)); // let the webhook delivery attempt log

    assert.ok(lines.length >= 15, `only ${lines.length} log lines`);
    const log = lines.join('\n');
    const secrets = {
      password,
      session_token: session,
      api_key: key,
      api_key_signature: key.split('.').at(-1)!,
      admin_token: ADMIN_TOKEN,
      upstream_key: 'sk-upstream-very-secret-0001',
      wrong_upstream_key: 'sk-wrong-upstream-secret-0002',
      webhook_secret: hook.body.secret as string,
      looked_up_email: 'looked-up.person',
    };
    for (const [what, secret] of Object.entries(secrets)) assert.ok(!log.includes(secret), `the log contains the ${what}`);
    const requests = lines.map((l) => JSON.parse(l)).filter((r) => r.msg === 'request');
    assert.ok(requests.length >= 10);
    for (const r of requests) assert.match(String(r.request_id), /^req_[0-9a-f]{32}$/);
    // What a route logs through request.log (made lazily, on its first line) carries its request id.
    const failure = lines.map((l) => JSON.parse(l)).find((r) => r.msg === 'request failed');
    assert.equal(failure?.request_id, failed.headers.get('x-request-id'));
    assert.equal(failure?.code, 'model_misconfigured');
  });
});
