// usage_spike's rule: the current 5-minute window against the trailing 24-hour average per window,
// multiple 5, at least minTokens; once per account and window.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AccountEvent } from '../../src/shared/events.ts';
import { judge, UsageSpikeDetector, type UsageSample } from '../../src/webhooks/usage-spike.ts';
import { openTestStore, tempDir } from '../actors/helpers.ts';

const CFG = { enabled: true, windowSeconds: 300, baselineHours: 24, multiple: 5, minTokens: 1000 };
const W = 300_000;

test('judge: baseline is the trailing average per window; both the multiple and the minimum must be passed', () => {
  const now = 1_000 * W;
  const buckets: Record<string, number> = {};
  for (let i = 1; i <= 288; i++) buckets[String(now - i * W)] = 100;
  buckets[String(now - 400 * W)] = 1_000_000; // older than 24 h: not in the baseline
  assert.deepEqual(judge({ ...buckets, [now]: 500 }, now, CFG), { tokens: 500, baseline: 100, spike: false });
  assert.equal(judge({ ...buckets, [now]: 999 }, now, CFG).spike, false, 'under minTokens');
  assert.equal(judge({ ...buckets, [now]: 1000 }, now, CFG).spike, true);
  assert.equal(judge({ [now]: 999 }, now, CFG).spike, false);
  assert.equal(judge({ [now]: 1000 }, now, CFG).spike, true, 'no history: the minimum alone decides');
  const busy: Record<string, number> = {};
  for (let i = 1; i <= 288; i++) busy[String(now - i * W)] = 1000;
  assert.equal(judge({ ...busy, [now]: 4000 }, now, CFG).spike, false, '4x a busy baseline is not a spike');
  assert.equal(judge({ ...busy, [now]: 5001 }, now, CFG).spike, true);
});

test('detector on the store: fires once per account and window, again in a later window, never for a late batch', async (t) => {
  const { dir, remove } = tempDir();
  const store = await openTestStore(dir);
  t.after(async () => {
    await store.close();
    remove();
  });
  let now = 2_000 * W + 1_000;
  const events: AccountEvent[] = [];
  const d = new UsageSpikeDetector(
    store,
    { emit: async (e) => void events.push(e) },
    CFG,
    () => now,
    (err) => {
      throw err;
    },
  );
  const rec = (ts: number, tokens: number, owner_id = 1, owner_type: 'user' | 'org' = 'user'): UsageSample => ({
    ts: new Date(ts),
    owner_type,
    owner_id,
    prompt_tokens: tokens - 1,
    completion_tokens: 1,
  });
  // A day of 100 tokens per window, in one batch.
  d.observe(Array.from({ length: 288 }, (_, i) => rec(now - (i + 1) * W, 100)));
  await d.settled();
  assert.equal(events.length, 0, 'past windows never fire');

  d.observe([rec(now, 300), rec(now, 200)]);
  await d.settled();
  assert.equal(events.length, 0);
  d.observe([rec(now, 600)]);
  await d.settled();
  assert.equal(events.length, 1);
  assert.deepEqual(events[0], {
    event: 'usage_spike',
    owner: { type: 'user', id: 1 },
    fields: { user_id: 1, window_seconds: 300, tokens: 1100, baseline_tokens: 100, multiple: 5 },
  });
  d.observe([rec(now, 5000)]);
  await d.settled();
  assert.equal(events.length, 1, 'once per window');

  // Another account in the same batch, and an organization, are judged on their own.
  d.observe([rec(now, 999, 2), rec(now, 1500, 3, 'org')]);
  await d.settled();
  assert.deepEqual(
    events.slice(1).map((e) => [e.owner, e.fields.org_id]),
    [[{ type: 'org', id: 3 }, 3]],
  );

  now += W;
  d.observe([rec(now - W, 10_000)]); // a late batch for the previous window
  await d.settled();
  assert.equal(events.length, 2);
  d.observe([rec(now, 2000)]);
  await d.settled();
  assert.equal(events.length, 3, 'the next window fires again');
  assert.equal(events[2]!.fields.tokens, 2000);
});
