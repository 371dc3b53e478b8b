// Webhook deliveries through the whole gateway, to real HTTP receivers on loopback: the spec's
// headers and signature over the raw body, the 5-second limit, 10 failures → disabled (and nothing
// more delivered), re-enable, a slow receiver not holding up the others.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { waitFor } from '../actors/helpers.ts';
import { answer, hang, startReceiver, verify, type Receiver } from './receiver.ts';

const LOOPBACK = { webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 } };

describe('webhook delivery', () => {
  let gw: TestGateway;
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };
  before(async () => {
    gw = await startTestGateway(LOOPBACK);
  });
  after(async () => {
    for (const r of receivers) await r.close();
    await gw.destroy();
  });

  const topup = (userId: number, amount = 100) =>
    call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: userId, amount_cents: amount } });
  const create = async (token: string, url: string, events: string[] = ['topup']) => {
    const res = await call(gw.url, 'POST', '/portal/webhooks', { token, body: { url, events } });
    assert.equal(res.status, 201, res.text);
    return res.body as { id: number; secret: string; url: string; events: string[]; status: string };
  };

  it('POSTs the spec headers and a body whose signature verifies over the raw bytes; id unique, ts in seconds', async () => {
    const r = await receiver();
    const u = await signup(gw.url);
    const hook = await create(u.token, r.url);
    assert.match(hook.secret, /^whsec_/);
    assert.equal(hook.status, 'enabled');
    const before = Math.floor(Date.now() / 1000);
    assert.equal((await topup(u.id, 150)).status, 201);
    assert.equal((await topup(u.id, 50)).status, 201);
    await waitFor('two deliveries', () => r.received.length >= 2);
    for (const got of r.received) {
      assert.equal(got.headers['content-type'], 'application/json');
      assert.equal(got.headers['x-service-event'], 'topup');
      assert.match(String(got.headers['x-service-signature']), /^sha256=[0-9a-f]{64}$/);
      assert.ok(verify(hook.secret, got.raw, got.headers['x-service-signature']), 'independent HMAC check over the raw body');
      assert.ok(!verify('whsec_wrong', got.raw, got.headers['x-service-signature']));
      assert.equal(got.json.event, 'topup');
      assert.equal(got.json.user_id, u.id);
      assert.ok(Number.isInteger(got.json.ts) && (got.json.ts as number) >= before - 1 && (got.json.ts as number) <= Date.now() / 1000 + 1);
      assert.match(String(got.json.id), /^evt_/);
    }
    const amounts = r.received.map((g) => g.json.amount_cents).sort();
    assert.deepEqual(amounts, [150, 50].sort());
    assert.notEqual(r.received[0]!.json.id, r.received[1]!.json.id);
    const last = r.received.find((g) => g.json.amount_cents === 50)!;
    assert.ok(typeof last.json.new_balance_cents === 'number');

    // The delivery log is written when the receiver's answer is in, just after the receiver saw the
    // request: wait for both entries rather than race the second.
    const deliveries = await waitFor('two delivery log entries', async () => {
      const d = await call(gw.url, 'GET', `/portal/webhooks/${hook.id}/deliveries`, { token: u.token });
      return d.status === 200 && d.body.data.length === 2 && d;
    });
    assert.equal(deliveries.body.data[0].ok, true);
    assert.equal(deliveries.body.data[0].status_code, 204);
    assert.equal(deliveries.body.data[0].event, 'topup');
    const listed = await call(gw.url, 'GET', '/portal/webhooks', { token: u.token });
    assert.equal(listed.body.data[0].secret, undefined, 'the secret is never listed');
    assert.ok(listed.body.data[0].last_delivery_at);
  });

  it('an unsubscribed event, and another account’s event, are not delivered', async () => {
    const r = await receiver();
    const u = await signup(gw.url);
    const other = await signup(gw.url);
    await create(u.token, r.url, ['low_balance']);
    await topup(u.id);
    await topup(other.id);
    await sleep(400);
    assert.equal(r.received.length, 0);
  });

  it('/test sends a signed ping and answers with the outcome, never the receiver’s body', async () => {
    const r = await receiver(answer(500));
    const u = await signup(gw.url);
    const hook = await create(u.token, r.url);
    const res = await call(gw.url, 'POST', `/portal/webhooks/${hook.id}/test`, { token: u.token });
    assert.equal(res.status, 200);
    assert.equal(res.body.ok, false);
    assert.equal(res.body.status_code, 500);
    assert.ok(Number.isInteger(res.body.latency_ms));
    assert.ok(!res.text.includes('must never be shown'));
    assert.equal(r.received.length, 1);
    assert.equal(r.received[0]!.json.event, 'ping');
    assert.equal(r.received[0]!.headers['x-service-event'], 'ping');
    assert.ok(verify(hook.secret, r.received[0]!.raw, r.received[0]!.headers['x-service-signature']));
    r.set(answer(200));
    const ok = await call(gw.url, 'POST', `/portal/webhooks/${hook.id}/test`, { token: u.token });
    assert.deepEqual([ok.body.ok, ok.body.status_code], [true, 200]);
    const shown = await call(gw.url, 'GET', `/portal/webhooks/${hook.id}`, { token: u.token });
    assert.equal(shown.body.consecutive_failures, 0, 'a test ping does not move the counter');
  });

  it('a redirect is a failure and is not followed', async () => {
    const target = await receiver();
    const r = await receiver((_req, res) => {
      res.writeHead(307, { location: target.url });
      res.end();
    });
    const u = await signup(gw.url);
    const hook = await create(u.token, r.url);
    const res = await call(gw.url, 'POST', `/portal/webhooks/${hook.id}/test`, { token: u.token });
    assert.deepEqual([res.body.ok, res.body.status_code], [false, 307]);
    assert.equal(target.received.length, 0);
  });

  it('10 consecutive failures disable the webhook once; nothing more is delivered; re-enable restarts the counter', async () => {
    const r = await receiver(answer(503));
    const u = await signup(gw.url);
    const hook = await create(u.token, r.url);
    // 9 failures, then a 2xx resets the counter.
    for (let i = 0; i < 9; i++) await topup(u.id, 1);
    await waitFor('9 attempts', () => r.received.length === 9);
    await waitFor('counter at 9', async () => (await call(gw.url, 'GET', `/portal/webhooks/${hook.id}`, { token: u.token })).body.consecutive_failures === 9);
    r.set(answer(200));
    await topup(u.id, 1);
    await waitFor('counter reset', async () => {
      const b = (await call(gw.url, 'GET', `/portal/webhooks/${hook.id}`, { token: u.token })).body;
      return b.consecutive_failures === 0 && r.received.length === 10 && b;
    });

    r.set(answer(500));
    for (let i = 0; i < 14; i++) await topup(u.id, 1);
    const disabled = await waitFor('disabled', async () => {
      const b = (await call(gw.url, 'GET', `/portal/webhooks/${hook.id}`, { token: u.token })).body;
      return b.status === 'disabled' && b;
    });
    assert.equal(disabled.consecutive_failures, 10);
    assert.ok(disabled.disabled_at);
    await sleep(500);
    assert.equal(r.received.length, 20, 'exactly 10 failed attempts after the reset, none after disabling');
    const metrics = await call(gw.metricsUrl, 'GET', '/metrics');
    assert.match(metrics.text, /gateway_webhook_endpoints_disabled_total 1/);
    // The 4 events after the 10th failure were either still queued (dropped, counted) or emitted
    // after the disabling (never queued for it).
    const dropped = Number(/gateway_webhook_events_dropped_total\{reason="endpoint_disabled"\} (\d+)/.exec(metrics.text)?.[1] ?? 0);
    assert.ok(dropped <= 4);

    for (let i = 0; i < 3; i++) await topup(u.id, 1);
    await sleep(500);
    assert.equal(r.received.length, 20, 'a disabled endpoint receives nothing');

    r.set(answer(200));
    const enabled = await call(gw.url, 'POST', `/portal/webhooks/${hook.id}/enable`, { token: u.token });
    assert.equal(enabled.status, 200);
    assert.deepEqual([enabled.body.status, enabled.body.consecutive_failures, enabled.body.disabled_at], ['enabled', 0, null]);
    await topup(u.id, 7);
    await waitFor('delivery after re-enable', () => r.received.length === 21);
    assert.equal(r.received[20]!.json.amount_cents, 7);
  });

  it('a receiver that never answers fails after 5 s; a fast receiver is served meanwhile', async () => {
    const slow = await receiver(hang);
    const fast = await receiver();
    const a = await signup(gw.url);
    const b = await signup(gw.url);
    const slowHook = await create(a.token, slow.url);
    await create(b.token, fast.url);
    const started = Date.now();
    await topup(a.id, 3);
    await waitFor('the slow receiver got it', () => slow.received.length === 1);
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) await topup(b.id, 1);
    await waitFor('fast deliveries', () => fast.received.length === 5);
    assert.ok(Date.now() - t0 < 2000, `fast receiver served in ${Date.now() - t0} ms while the slow one hangs`);
    const failed = await waitFor(
      'the timeout',
      async () => {
        const d = (await call(gw.url, 'GET', `/portal/webhooks/${slowHook.id}/deliveries`, { token: a.token })).body.data;
        return d.length === 1 && d[0];
      },
      8000,
    );
    assert.equal(failed.ok, false);
    assert.equal(failed.error, 'timeout');
    assert.equal(failed.status_code, null);
    assert.ok(failed.latency_ms >= 4900 && failed.latency_ms < 6000, `latency ${failed.latency_ms}`);
    assert.ok(Date.now() - started >= 4900);
  });
});
