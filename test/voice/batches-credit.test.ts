// A batch whose wallet cannot afford a call: it pauses (paused_reason insufficient_credit, the
// batch.paused event), places nothing and holds nothing while paused, and resumes by itself once a
// top-up lets the wallet afford a call (batch.resumed: woken by the top-up, not its 10-minute re-check),
// then completes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { voiceAccount } from './helpers.ts';
import { createBatch, ist, numbers, startBatchGateway, TestClock, waitForBatch } from './batches-helpers.ts';

describe('a voice batch and the wallet', () => {
  let gw: TestGateway;
  const clock = new TestClock(ist(12, 0));
  before(async () => {
    // The wallet re-checked only every 10 minutes (and at most a minute of sleep): the top-up itself must wake the batch.
    gw = await startBatchGateway(clock, { creditRecheckMs: 600_000, maxSleepMs: 60_000 });
  });
  after(() => gw?.destroy());

  it('pauses when the wallet cannot afford the next call and resumes after a top-up', async () => {
    const acc = await voiceAccount(gw, 0);
    const res = await createBatch(gw, acc.key, { calls: numbers(3), max_concurrent: 2, max_duration_seconds: 60 });
    assert.equal(res.status, 201, res.text);
    const id = res.body.id;
    const paused = await waitForBatch(gw, acc.key, id, (x) => x.status === 'paused', 5000);
    assert.deepEqual([paused.status, paused.paused_reason, paused.counts.queued, paused.counts.in_progress], ['paused', 'insufficient_credit', 3, 0]);
    await new Promise((r) => setTimeout(r, 1000));
    const still = await waitForBatch(gw, acc.key, id, () => true);
    assert.deepEqual([still.status, still.calls.data.flatMap((r: any) => r.attempts).length], ['paused', 0], 'no call placed, no attempt counted');
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: acc.session })).body;
    assert.equal(wallet.held_cents, 0, 'nothing reserved for calls not placed');
    const topup = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: acc.id, amount_cents: 100 } });
    assert.equal(topup.status, 201, topup.text);
    const b = await waitForBatch(gw, acc.key, id, (x) => x.status === 'completed', 15_000);
    assert.deepEqual([b.status, b.counts.completed], ['completed', 3]);
    const events = gw.events.filter((e) => e.fields.batch_id === id).map((e) => [e.event, e.fields.reason ?? null]);
    assert.deepEqual(events, [
      ['batch.started', null],
      ['batch.paused', 'insufficient_credit'],
      ['batch.resumed', null],
      ['batch.completed', null],
    ]);
    const after = (await call(gw.url, 'GET', '/portal/wallet', { token: acc.session })).body;
    assert.equal(
      Math.round((100 - after.balance_microcents / 1e6) * 1e6),
      Math.round(b.cost_cents * 1e6),
      'the wallet paid exactly what the batch says its calls cost',
    );
  });
});
