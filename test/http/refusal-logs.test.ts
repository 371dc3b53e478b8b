// Refusals are operating conditions, not faults (issue 39, item 10): a 503 `model_unavailable` (no
// upstream could serve: down, or its slots held past the queue wait) is logged once at warn with
// its code and reason, without a stack; a fault an operator must fix (`model_misconfigured`) is
// still logged at error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

describe('5xx logs: refusals at warn without a stack, faults at error', () => {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  let gw: TestGateway;
  let key: string;

  before(async () => {
    gw = await startTestGateway({}, { logger: createLogger('info', sink) });
    const user = await signup(gw.url);
    key = (await createKey(gw.url, user.token)).api_key;
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: 100 } })).status, 201);
    const model = (route: Record<string, unknown>) => ({
      type: 'llm',
      owned_by: 't',
      pricing: { input_cents_per_mtok: 1, output_cents_per_mtok: 1 },
      routes: [{ provider: 'openai', upstream_model: 'u', ...route }],
    });
    // Nothing listens on port 9 of the loopback: every attempt fails to connect.
    assert.equal(
      (await call(gw.url, 'PUT', '/admin/models/down-chat', { token: ADMIN_TOKEN, body: model({ base_url: 'http://127.0.0.1:9/v1', api_key: 'k' }) })).status,
      201,
    );
    const unset = model({ base_url: 'http://127.0.0.1:9/v1', api_key_env: 'GATEWAY_TEST_UNSET_KEY_39' });
    assert.equal((await call(gw.url, 'PUT', '/admin/models/misconfigured-chat', { token: ADMIN_TOKEN, body: unset })).status, 201);
  });
  after(async () => gw?.destroy());

  const chat = async (model: string) => {
    const res = await call(gw.url, 'POST', '/v1/chat/completions', { token: key, body: { model, messages: [{ role: 'user', content: 'hi' }] } });
    assert.equal(res.status, 503, res.text);
    const id = res.headers.get('x-request-id');
    const own = lines.filter((l) => l.request_id === id && l.msg !== 'request');
    return { code: res.body.error.code as string, own };
  };

  it('a 503 model_unavailable: one warn line with its code and reason, no stack, nothing at error', async () => {
    const { code, own } = await chat('down-chat');
    assert.equal(code, 'model_unavailable');
    const refused = own.filter((l) => l.msg === 'request refused');
    assert.equal(refused.length, 1, JSON.stringify(own));
    assert.equal(refused[0]!.level, 40);
    assert.equal(refused[0]!.code, 'model_unavailable');
    assert.match(String(refused[0]!.reason), /no upstream route could serve/);
    assert.ok(!JSON.stringify(own).includes('"stack"'), `no stack: ${JSON.stringify(own)}`);
    assert.deepEqual(
      own.filter((l) => Number(l.level) >= 50),
      [],
    );
  });

  it('a 503 model_misconfigured (a route without its key) stays at error', async () => {
    const { code, own } = await chat('misconfigured-chat');
    assert.equal(code, 'model_misconfigured');
    const failed = own.find((l) => l.msg === 'request failed');
    assert.equal(failed?.level, 50, JSON.stringify(own));
    assert.equal(failed?.code, 'model_misconfigured');
  });
});
