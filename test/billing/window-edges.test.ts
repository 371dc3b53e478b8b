// Per-key limit windows with calls in flight across their edges (the minute, midnight UTC, the 1st of
// the month), on a hand-moved clock: calls admitted together never take a window past its limit,
// and a call that ends after the edge counts once, in the window it was admitted in.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/http/errors.ts';
import type { BillingService } from '../../src/billing/service.ts';
import type { Hold, Payer } from '../../src/billing/types.ts';
import { facts, fixture, fund, limitedKey, walletOf, type Fixture } from './helpers.ts';

const DAY = 86_400;

describe('per-key limit windows with calls in flight across their edges', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture();
  });
  after(() => fx.close());

  const limited = (e: unknown) => e instanceof ApiError && e.code === 'rate_limit_exceeded' && e.status === 429;

  /** The count of a key's limit window holding `at` (rate_windows: `<type>:<key id>/<period>@<start>`). */
  async function windowCount(type: string, keyId: number, period: number | 'month', at: number): Promise<number> {
    const d = new Date(at);
    const start = period === 'month' ? Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) : Math.floor(at / (period * 1000)) * period * 1000;
    const doc = await fx.store.collection('rate_windows').findOne({ _id: `${type}:${keyId}/${period}@${start}` });
    return (doc?.count as number | undefined) ?? 0;
  }

  /** `n` holds asked for at once, each of `uc` µ¢ and `tokens` tokens: the holds taken and the refusals. */
  async function holdsAtOnce(b: BillingService, payer: Payer, n: number, uc: number, tokens: number) {
    const outcomes = await Promise.allSettled(Array.from({ length: n }, (_, i) => b.hold(payer, uc, `req_${i}`, { tokens })));
    const holds = outcomes.filter((o): o is PromiseFulfilledResult<Hold> => o.status === 'fulfilled').map((o) => o.value);
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason as unknown);
    for (const e of refused) assert.ok(limited(e), String(e));
    return { holds, refused };
  }

  it('tpd: calls admitted together before midnight UTC never pass the day; those ending after it count in the day they began', async () => {
    fx.clock.t = Date.UTC(2026, 2, 10, 23, 59, 59, 500);
    const before = fx.clock.t;
    const { b1, b2, p, payer } = await limitedKey(fx, { tpd: 1000 });
    // Six calls that may use 400 tokens each, on two instances at once: two fit in 1000.
    const [one, two] = await Promise.all([holdsAtOnce(b1, payer, 3, 1000, 400), holdsAtOnce(b2, payer, 3, 1000, 400)]);
    const holds = [...one.holds, ...two.holds];
    assert.equal(holds.length, 2, 'never more than the limit, however many calls arrive at once');
    assert.match(String((one.refused[0] ?? two.refused[0]) as Error), /daily limit of 1000 tokens has 200 left today .* may use up to 400/);
    assert.equal(await windowCount('tpd', p.keyId, DAY, before), 800, 'the two calls hold their most');

    fx.clock.t = Date.UTC(2026, 2, 11, 0, 0, 0, 700); // midnight passes while they run
    await b1.settle(holds[0]!, payer, facts(500, { promptTokens: 200, completionTokens: 100 }));
    await b2.release(holds[1]!, payer, facts(0, { promptTokens: 0, completionTokens: 0, status: 'upstream_failed' }));
    await Promise.all([b1.flush(), b2.flush()]);
    assert.equal(await windowCount('tpd', p.keyId, DAY, before), 300, "the settled call's tokens stay in its day, the failed one's are given back");
    assert.equal(await windowCount('tpd', p.keyId, DAY, fx.clock.t), 0, 'nothing counted in the new day');
    assert.equal((await b1.admit(p))?.['x-ratelimit-used-tpd'], '0');
    // The new day has its whole limit.
    const fresh = await holdsAtOnce(b1, payer, 2, 1000, 1000);
    assert.equal(fresh.holds.length, 1);
  });

  it('cpd and cpm: spend admitted before the 1st of a month at 00:00 UTC never passes either cap, and counts in the day and month it began', async () => {
    fx.clock.t = Date.UTC(2026, 0, 31, 23, 59, 59, 900);
    const before = fx.clock.t;
    const { b1, b2, p, payer } = await limitedKey(fx, { cpd: 2, cpm: 3 });
    // Holds of 0.7 ¢: two fit in the day's 2 ¢ cap, never three.
    const [one, two] = await Promise.all([holdsAtOnce(b1, payer, 4, 700_000, 0), holdsAtOnce(b2, payer, 4, 700_000, 0)]);
    const holds = [...one.holds, ...two.holds];
    assert.equal(holds.length, 2, 'never more than the cap, however many calls arrive at once');
    assert.equal(await windowCount('cpd', p.keyId, DAY, before), 1_400_000);
    assert.equal(await windowCount('cpm', p.keyId, 'month', before), 1_400_000);

    fx.clock.t = Date.UTC(2026, 1, 1, 0, 0, 1); // a new day and a new month while they run
    await b1.settle(holds[0]!, payer, facts(412_345.5));
    await b2.settle(holds[1]!, payer, facts(9_000_000)); // reported above its hold: capped at it
    await Promise.all([b1.flush(), b2.flush()]);
    const spent = 412_346 + 700_000;
    assert.equal(await windowCount('cpd', p.keyId, DAY, before), spent, 'what they cost, in the day they began');
    assert.equal(await windowCount('cpm', p.keyId, 'month', before), spent, 'and in the month they began');
    assert.equal(await windowCount('cpd', p.keyId, DAY, fx.clock.t), 0, 'nothing in the new day');
    assert.equal(await windowCount('cpm', p.keyId, 'month', fx.clock.t), 0, 'nothing in the new month');
    const records = await fx.store.collection('usage_records').find({ key_id: p.keyId });
    assert.equal(
      records.reduce((s, r) => s + (r.cost_uc as number), 0),
      spent,
      'the windows hold what the usage records say',
    );
    assert.equal((await walletOf(fx.store, payer.walletId)).held_uc, 0);
    // The new day and month start empty: two holds of 1 ¢ fit in the day's 2 ¢, a third does not.
    const fresh = await holdsAtOnce(b1, payer, 3, 1_000_000, 0);
    assert.equal(fresh.holds.length, 2);
  });

  it('a hold the wallet refuses takes nothing from the windows', async () => {
    const { b1, p, payer } = await limitedKey(fx, { tpd: 1000, cpd: 5 });
    await fund(fx.store, payer.walletId, 10);
    await assert.rejects(b1.hold(payer, 1_000_000, 'req_broke', { tokens: 500 }), (e: unknown) => e instanceof ApiError && e.code === 'insufficient_credit');
    assert.equal(await windowCount('tpd', p.keyId, DAY, fx.clock.t), 0);
    assert.equal(await windowCount('cpd', p.keyId, DAY, fx.clock.t), 0);
    assert.equal(await windowCount('cpm', p.keyId, 'month', fx.clock.t), 0);
  });

  it('a replaced hold gives its reservation back to the window it was taken in', async () => {
    fx.clock.t = Date.UTC(2026, 3, 30, 23, 59, 59);
    const before = fx.clock.t;
    const { b1, p, payer } = await limitedKey(fx, { cpd: 5 });
    const first = await b1.hold(payer, 1_000_000, 'req_job');
    fx.clock.t += 2000;
    const cover = await b1.hold(payer, 2_000_000, 'req_job');
    await b1.drop(first);
    await b1.drop(first); // a repeat gives nothing back twice
    assert.equal(await windowCount('cpd', p.keyId, DAY, before), 0);
    assert.equal(await windowCount('cpd', p.keyId, DAY, fx.clock.t), 2_000_000);
    await b1.settle(cover, payer, facts(1_500_000));
    await b1.flush();
    assert.equal(await windowCount('cpd', p.keyId, DAY, fx.clock.t), 1_500_000);
  });

  it('rpm: a request counts once, in the minute it arrived, however long it runs', async () => {
    fx.clock.t = Date.UTC(2026, 2, 10, 12, 0, 59, 900);
    const before = fx.clock.t;
    const { b1, b2, p, payer } = await limitedKey(fx, { rpm: 3 });
    const first = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => (i % 2 ? b1 : b2).admit(p)));
    assert.equal(first.filter((o) => o.status === 'fulfilled').length, 3, 'never more than the limit in the minute');
    const holds = await Promise.all([0, 1, 2].map((i) => b1.hold(payer, 1000, `req_${i}`)));
    fx.clock.t = Date.UTC(2026, 2, 10, 12, 1, 0, 100); // the minute ends while they run
    for (const h of holds) await b1.settle(h, payer, facts(500));
    await b1.flush();
    const second = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => (i % 2 ? b1 : b2).admit(p)));
    assert.equal(second.filter((o) => o.status === 'fulfilled').length, 3, 'the next minute has its whole limit: the calls in flight are not counted again');
    assert.equal(await windowCount('rpm', p.keyId, 60, before), 8);
    assert.equal(await windowCount('rpm', p.keyId, 60, fx.clock.t), 8);
  });
});
