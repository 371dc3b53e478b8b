// A batch across its window's edge and across retry gaps, on a clock the test moves: created at
// 20:59 India time it places calls until 21:00, then waits (status waiting_window, a durable
// wake-up) and places the rest from 09:00 the next day; a busy number is retried after its gap,
// never before, each attempt recorded.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, type TestGateway } from '../helper.ts';
import { voiceAccount, type VoiceAccount } from './helpers.ts';
import { createBatch, ist, numbers, startBatchGateway, TestClock, waitForBatch } from './batches-helpers.ts';

describe('voice batches in time', () => {
  let gw: TestGateway;
  let acc: VoiceAccount;
  const clock = new TestClock(ist(20, 59));
  before(async () => {
    gw = await startBatchGateway(clock);
    acc = await voiceAccount(gw, 1000);
  });
  after(() => gw?.destroy());

  const callsOf = async (b: any) => {
    const out = [];
    for (const row of b.calls.data)
      for (const a of row.attempts) out.push((await call(gw.url, 'GET', `/v1/voice/calls/${a.call_id}`, { token: acc.key })).body);
    return out;
  };

  it('created at 20:59 local time, places calls until 21:00, then waits for 09:00 the next day', async () => {
    clock.set(ist(20, 59));
    const res = await createBatch(gw, acc.key, { calls: numbers(10), max_concurrent: 2 });
    assert.equal(res.status, 201, res.text);
    const id = res.body.id;
    await waitForBatch(gw, acc.key, id, (x) => x.counts.completed >= 2, 8000);
    clock.set(ist(20, 59, 58)); // the last two seconds of the window
    const waiting = await waitForBatch(gw, acc.key, id, (x) => x.status === 'waiting_window' && x.counts.in_progress === 0, 10_000);
    assert.equal(waiting.status, 'waiting_window', JSON.stringify(waiting.counts));
    assert.equal(waiting.next_window_at, ist(9, 0, 0, 1) / 1000, 'the next window: 09:00 the next day');
    const before = await callsOf(waiting);
    assert.ok(before.length >= 2 && before.length < 10, `placed before 21:00: ${before.length}`);
    for (const c of before) assert.ok(c.created_at < ist(21, 0) / 1000, `placed at ${c.created_at}, after 21:00`);
    // Night: nothing is placed however long the batch waits.
    clock.set(ist(3, 0, 0, 1));
    await new Promise((r) => setTimeout(r, 1500));
    const night = await waitForBatch(gw, acc.key, id, () => true);
    assert.deepEqual([night.status, night.counts.completed + night.counts.in_progress], ['waiting_window', before.length]);
    clock.set(ist(8, 59, 59, 1));
    const b = await waitForBatch(gw, acc.key, id, (x) => x.status === 'completed', 20_000);
    assert.equal(b.status, 'completed', JSON.stringify(b.counts));
    const all = await callsOf(b);
    assert.equal(all.length, 10, 'every number once');
    const morning = all.filter((c) => c.created_at >= ist(9, 0, 0, 1) / 1000);
    assert.equal(morning.length, 10 - before.length, 'the rest placed from 09:00');
    assert.equal(all.filter((c) => c.created_at >= ist(21, 0) / 1000 && c.created_at < ist(9, 0, 0, 1) / 1000).length, 0, 'none at night');
  });

  it('retries a busy number after min_gap_seconds, never before, recording every attempt; other outcomes are not retried', async () => {
    clock.set(ist(12, 0, 0, 2));
    const calls = [{ to: '+919800000201' }, { to: '+919800001300' }];
    const res = await createBatch(gw, acc.key, { calls, retry: { on: ['busy'], max_attempts: 3, min_gap_seconds: 60 } });
    assert.equal(res.status, 201, res.text);
    const id = res.body.id;
    for (let attempt = 1; attempt <= 3; attempt++) {
      const b = await waitForBatch(gw, acc.key, id, (x) => x.calls.data[0].attempts.length === attempt && x.counts.in_progress === 0, 8000);
      const row = b.calls.data[0];
      assert.equal(row.attempts.length, attempt, JSON.stringify(row));
      const last = row.attempts.at(-1);
      assert.deepEqual([last.status, last.end_reason], ['busy', 'dial_busy']);
      if (attempt < 3) {
        assert.equal(row.status, 'queued');
        assert.equal(row.next_attempt_at, last.ended_at + 60, 'the gap from the attempt’s end');
        await new Promise((r) => setTimeout(r, 800));
        const early = await waitForBatch(gw, acc.key, id, () => true);
        assert.equal(early.calls.data[0].attempts.length, attempt, 'not before the gap');
        clock.set(clock.now() + 61_000);
      } else {
        assert.deepEqual([row.status, row.next_attempt_at, row.final_call_id], ['busy', null, last.call_id]);
        for (let i = 1; i < 3; i++) assert.ok(row.attempts[i].started_at >= row.attempts[i - 1].ended_at + 60, JSON.stringify(row.attempts));
        assert.equal(new Set(row.attempts.map((a: any) => a.call_id)).size, 3);
      }
    }
    const b = await waitForBatch(gw, acc.key, id, (x) => x.status === 'completed');
    assert.deepEqual([b.calls.data[1].status, b.calls.data[1].attempts.length], ['completed', 1]);
    assert.deepEqual([b.counts.busy, b.counts.completed], [1, 1]);
  });

  it('waits for start_at (scheduled), then starts by itself', async () => {
    clock.set(ist(13, 0, 0, 3));
    const startAt = Math.floor(clock.now() / 1000) + 600;
    const res = await createBatch(gw, acc.key, { calls: numbers(1, 30), start_at: startAt });
    assert.deepEqual([res.status, res.body.status, res.body.start_at, res.body.started_at], [201, 'scheduled', startAt, null]);
    await new Promise((r) => setTimeout(r, 1200));
    assert.equal((await waitForBatch(gw, acc.key, res.body.id, () => true)).status, 'scheduled', 'not before start_at');
    clock.set(startAt * 1000 + 100);
    const b = await waitForBatch(gw, acc.key, res.body.id, (x) => x.status === 'completed', 10_000);
    assert.equal(b.status, 'completed');
    assert.ok(b.started_at >= startAt, `${b.started_at} >= ${startAt}`);
  });
});
