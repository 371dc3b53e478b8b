// An event accepted for delivery survives a restart: the outbox document is written before the
// emitting request answers, and the next process's start-up sweep has the endpoint actor drain it.
import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, signup, startTestGateway } from '../helper.ts';
import { waitFor } from '../actors/helpers.ts';
import { startReceiver, verify } from './receiver.ts';

const LOOPBACK = { webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 } };

test('events left in the outbox by a process that never delivered them are delivered after the restart', async (t) => {
  const r = await startReceiver();
  t.after(() => r.close());
  const first = await startTestGateway(LOOPBACK);
  const dir = first.dir;
  t.after(() => rm(dir, { recursive: true, force: true }));
  const u = await signup(first.url);
  const hook = (await call(first.url, 'POST', '/portal/webhooks', { token: u.token, body: { url: r.url, events: ['topup'] } })).body;

  // The actors die (as in a crash) while the HTTP side still accepts: the events are queued, not sent.
  first.runtime.abandon();
  for (const amount of [11, 12, 13]) {
    const res = await call(first.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: amount } });
    assert.equal(res.status, 201);
  }
  await sleep(300);
  assert.equal(r.received.length, 0);
  const queued = await first.store.collection('webhook_outbox').countDocuments({ webhook_id: hook.id });
  assert.equal(queued, 3);
  await first.close();

  const second = await startTestGateway(LOOPBACK, { dir });
  t.after(() => second.close());
  await waitFor('the three queued events', () => r.received.length === 3, 5000);
  assert.deepEqual(r.received.map((g) => g.json.amount_cents).sort(), [11, 12, 13]);
  for (const g of r.received) assert.ok(verify(hook.secret, g.raw, g.headers['x-service-signature']));
  assert.equal(new Set(r.received.map((g) => g.json.id)).size, 3);
  await waitFor('the outbox emptied', async () => (await second.store.collection('webhook_outbox').countDocuments({})) === 0);
});
