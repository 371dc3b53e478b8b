// What a crashed billing instance leaves, finished by the next one: holds returned at once when
// their instance is known dead (its lease expired on a shared store; any other instance, at start
// on a store this process alone owns), and usage records written from the wallets' outboxes (where
// each settle put its record with the debit) so records, rollups and counters match the debits,
// once, however often recovery runs. A "crash" here is an instance dropped without close().
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/http/errors.ts';
import { encodeEntry } from '../../src/billing/usage-entry.ts';
import type { UsageRecordDoc } from '../../src/billing/usage.ts';
import { facts, fixture, fund, principal, user, walletOf, type Fixture } from './helpers.ts';

describe('recovery after a crash', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture();
  });
  after(() => fx.close());

  const records = (owner: string) => fx.store.collection<UsageRecordDoc>('usage_records').find({ owner }, { limit: 10_000 });
  const sum = (rs: UsageRecordDoc[]) => rs.reduce((n, r) => n + r.cost_uc, 0);

  it("returns at once the holds of an instance whose lease expired, and only those; a live instance's stay", async () => {
    const dead = await fx.billing({ instanceLeaseSeconds: 10 });
    const live = await fx.billing({ instanceLeaseSeconds: 3600 });
    const u = await user(fx.store);
    const payer = await live.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 10_000);
    await dead.hold(payer, 4_000, 'r-dead');
    const mine = await live.hold(payer, 3_000, 'r-live');
    assert.equal(await live.sweepHolds(), 0, 'its lease is still current');
    fx.clock.t += 11_000; // the dead instance never renewed (hold TTL is 15 minutes)
    await assert.rejects(live.hold(payer, 5_000, 'r-small'), (e: unknown) => e instanceof ApiError && e.code === 'insufficient_credit');
    assert.equal(await live.sweepHolds(), 1);
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc, w.holds.length], [7_000, 3_000, 1]);
    await live.settle(mine, payer, facts(1_000));
    assert.equal((await walletOf(fx.store, payer.walletId)).balance_uc, 9_000);
  });

  it('at start on a store this process alone owns, returns every hold another instance left, whatever its lease', async () => {
    const crashed = await fx.billing({ instanceLeaseSeconds: 3600 });
    const u = await user(fx.store);
    const payer = await crashed.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 5_000);
    await crashed.hold(payer, 5_000, 'r1');
    const restarted = await fx.billing({}, { soleOwner: true });
    assert.equal((await restarted.recoverDead()).holds, 1);
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc, w.holds], [5_000, 0, []]);
    // Not 402: the whole wallet is available again.
    await restarted.hold(payer, 5_000, 'r2');
  });

  it('writes the records a crash left only in the wallets (buffered, not flushed), with their rollups and counters, once', async () => {
    const crashed = await fx.billing({ usageFlushIntervalMs: 60_000 });
    const u = await user(fx.store);
    const p = principal(u, { tpd: 1_000_000 });
    const payer = await crashed.payerFor(p);
    await fund(fx.store, payer.walletId, 1_000_000);
    for (let i = 0; i < 25; i++) {
      const hold = await crashed.hold(payer, 10_000, `r${i}`);
      await crashed.settle(hold, payer, facts(1_000 + i + 0.5));
    }
    const failed = await crashed.hold(payer, 10_000, 'r-released');
    await crashed.release(failed, payer, facts(0, { status: 'upstream_failed' }));
    const debited = 1_000_000 - (await walletOf(fx.store, payer.walletId)).balance_uc;
    assert.equal((await records(payer.walletId)).length, 0, 'nothing written yet: the crash loses the buffer');
    assert.equal((await walletOf(fx.store, payer.walletId)).usage_outbox.length, 26);

    const restarted = await fx.billing({}, { soleOwner: true });
    assert.equal((await restarted.recoverDead()).records, 26);
    const rs = await records(payer.walletId);
    assert.equal(rs.length, 26);
    assert.equal(sum(rs), debited, 'the records add up to what the wallet was debited');
    assert.equal(sum(rs), 25 * 1_001 + 300);
    const summary = await restarted.usageSummary(u, {});
    assert.deepEqual([summary.totals.requests, summary.totals.errors, summary.totals.cost_microcents, summary.totals.total_tokens], [26, 1, debited, 26 * 15]);
    assert.equal((await restarted.admit(p))?.['x-ratelimit-used-tpd'], String(26 * 15), "the key's daily tokens count them");
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.usage_outbox, w.usage_pending], [[], undefined]);

    // Again (another restart, or the periodic sweep): nothing is written twice.
    assert.equal((await (await fx.billing({}, { soleOwner: true })).recoverDead()).records, 0);
    assert.equal((await records(payer.walletId)).length, 26);
    assert.equal((await restarted.usageSummary(u, {})).totals.cost_microcents, debited);
  });

  it('finishes a batch cut short between its records and its rollups, rolling up only the records it wrote', async () => {
    const b = await fx.billing({}, { soleOwner: true });
    const u = await user(fx.store);
    const payer = await b.payerFor(principal(u));
    const ts = new Date(fx.clock.t);
    const rec = (id: string, cost: number): UsageRecordDoc => ({
      _id: id,
      ts,
      request_id: `q${id}`,
      owner: payer.walletId,
      owner_type: 'user',
      owner_id: u,
      user_id: u,
      key_id: payer.keyId,
      key_prefix: payer.keyPrefix,
      model: 'm1',
      model_type: 'llm',
      route: 'm1#0',
      cost_uc: cost,
      status: 'ok',
      latency_ms: 3,
      prompt_tokens: 10,
      completion_tokens: 5,
    });
    // What the crash left: batch b1 wrote x1 and x2 (x0 was an earlier batch's, already rolled up),
    // then died before its rollups; the three entries are still in the wallet's outbox.
    const [x0, x1, x2] = [rec('x0', 100), rec('x1', 200), rec('x2', 400)];
    await fx.store.collection('usage_records').insertMany([
      { ...x0, batch: 'b0' },
      { ...x1, batch: 'b1' },
      { ...x2, batch: 'b1' },
    ]);
    await fx.store.collection('usage_batches').insertOne({ _id: 'b1', instance: 'deadbeef', ids: ['x0', 'x1', 'x2'], created_at: ts });
    await fx.store.collection('wallets').updateOne({ _id: payer.walletId }, { $set: { usage_outbox: [x0, x1, x2].map(encodeEntry), usage_pending: true } });

    assert.equal((await b.recoverDead()).records, 0, 'all three were written before');
    assert.equal((await b.usageSummary(u, {})).totals.cost_microcents, 600, 'x1 and x2 rolled up, x0 not again');
    assert.equal(await fx.store.collection('usage_batches').countDocuments({}), 0);
    assert.deepEqual((await walletOf(fx.store, payer.walletId)).usage_outbox, []);
    await b.recoverDead();
    assert.equal((await b.usageSummary(u, {})).totals.cost_microcents, 600);
  });
});
