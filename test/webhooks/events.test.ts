// The account events, from what triggers them to a signed delivery at a real receiver on loopback:
// low_balance (once per crossing), key_expired (once per key), rate_limit_exceeded (coalesced per
// key, limit and window). topup is covered in delivery.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway, inOneRateWindow } from '../helper.ts';
import { waitFor } from '../actors/helpers.ts';
import { startReceiver, verify, type Receiver } from './receiver.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

describe('account events delivered by webhooks', () => {
  let gw: TestGateway;
  let up: FakeServer;
  let clock = Date.now();
  const receivers: Receiver[] = [];

  before(async () => {
    up = await startOpenAIUpstream();
    gw = await startTestGateway({ webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 } }, { now: () => clock });
    // 1 cent per prompt token: the fake upstream reports 2 prompt tokens, so a call costs 2 cents.
    const m = await call(gw.url, 'PUT', '/admin/models/pricey', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 't',
        max_output_tokens: 4,
        pricing: { input_cents_per_mtok: 1_000_000, output_cents_per_mtok: 1 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, upstream_model: 'u' }],
      },
    });
    assert.equal(m.status, 201, m.text);
  });
  after(async () => {
    for (const r of receivers) await r.close();
    await gw.destroy();
    await up.close();
  });

  async function subscribed(events: string[]) {
    const r = await startReceiver();
    receivers.push(r);
    const u = await signup(gw.url);
    const hook = await call(gw.url, 'POST', '/portal/webhooks', { token: u.token, body: { url: r.url, events } });
    assert.equal(hook.status, 201, hook.text);
    return { r, u, secret: hook.body.secret as string };
  }

  const chat = (key: string) =>
    call(gw.url, 'POST', '/v1/chat/completions', {
      token: key,
      body: { model: 'pricey', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 4 },
    });

  it('low_balance: one delivery when a call takes the wallet below the threshold, none for later calls', async () => {
    const { r, u, secret } = await subscribed(['low_balance']);
    assert.equal((await call(gw.url, 'PUT', '/portal/settings', { token: u.token, body: { low_balance_threshold_cents: 50 } })).status, 200);
    // 55 → 53 → 51 → 49: the third call crosses the threshold; the next five stay below it.
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 55 } });
    const key = await createKey(gw.url, u.token);
    for (let i = 0; i < 8; i++) {
      const res = await chat(key.api_key);
      assert.equal(res.status, 200, res.text);
    }
    const got = await waitFor('a low_balance delivery', () => r.received.length >= 1 && r.received);
    await sleep(500); // a second crossing would have been delivered by now
    assert.equal(r.received.length, 1, 'once per crossing');
    const d = got[0]!;
    assert.ok(verify(secret, d.raw, d.headers['x-service-signature']));
    assert.equal(d.headers['x-service-event'], 'low_balance');
    assert.equal(d.json.event, 'low_balance');
    assert.equal(d.json.user_id, u.id);
    assert.equal(d.json.threshold_cents, 50);
    assert.ok((d.json.balance_cents as number) < 50 && (d.json.balance_cents as number) >= 0, JSON.stringify(d.json));
  });

  it('key_expired: one delivery per key, however many requests it refuses', async () => {
    const { r, u, secret } = await subscribed(['key_expired']);
    const key = await createKey(gw.url, u.token, { name: 'short', expires_at: new Date(clock + 60_000).toISOString() });
    clock += 61_000;
    for (let i = 0; i < 3; i++) assert.equal((await call(gw.url, 'GET', '/v1/models', { token: key.api_key })).status, 401);
    const got = await waitFor('a key_expired delivery', () => r.received.length >= 1 && r.received);
    await sleep(500);
    assert.equal(r.received.length, 1);
    assert.ok(verify(secret, got[0]!.raw, got[0]!.headers['x-service-signature']));
    assert.equal(got[0]!.json.event, 'key_expired');
    assert.equal(got[0]!.json.key_prefix, key.prefix);
    assert.ok(Date.parse(String(got[0]!.json.expired_at)));
  });

  it('rate_limit_exceeded: a burst of 429s on one key gives one delivery for the window', async () => {
    const { r, u, secret } = await subscribed(['rate_limit_exceeded']);
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100_000 } });
    const key = await createKey(gw.url, u.token);
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${key.id}`, { token: u.token, body: { rpm: 2 } })).status, 200);
    const statuses: number[] = [];
    await inOneRateWindow();
    for (let i = 0; i < 6; i++) statuses.push((await chat(key.api_key)).status);
    assert.deepEqual(statuses, [200, 200, 429, 429, 429, 429]);
    const got = await waitFor('a rate_limit_exceeded delivery', () => r.received.length >= 1 && r.received);
    await sleep(500);
    assert.equal(r.received.length, 1, 'coalesced: one per key, limit and window');
    const d = got[0]!;
    assert.ok(verify(secret, d.raw, d.headers['x-service-signature']));
    assert.equal(d.json.event, 'rate_limit_exceeded');
    assert.equal(d.json.key_prefix, key.prefix);
    assert.equal(d.json.limit_type, 'rpm');
    assert.equal(d.json.limit, 2);
    assert.ok((d.json.used as number) > 2);
  });
});
