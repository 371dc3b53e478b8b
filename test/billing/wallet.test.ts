// Wallet money paths on the real embedded store: who pays, exact fractional arithmetic over many
// calls, no overspend under concurrency (also across two billing instances), exactly-once
// settlement, holds returned by the sweeper after a crash, low_balance once per crossing, migrations.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.ts';
import { assertKyc } from '../../src/billing/service.ts';
import { addMonths, chargeFor, PICOCENTS_PER_MICROCENT, walletIdOf, parseHold } from '../../src/billing/money.ts';
import { priceMicrocents } from '../../src/billing/pricing.ts';
import { call, facts, fixture, fund, org, principal, user, walletOf, type Fixture } from './helpers.ts';

const isCode = (code: string) => (err: unknown) => err instanceof ApiError && err.code === code;

describe('wallets', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture();
  });
  after(() => fx.close());

  it('pays from the organization wallet while the key owner is a member, else from the personal wallet', async () => {
    const b = await fx.billing();
    const owner = await user(fx.store);
    const member = await user(fx.store, { kyc: true });
    const o = await org(fx.store, owner, [member]);
    const p = principal(member);

    const inOrg = await b.payerFor(p);
    assert.deepEqual([inOrg.walletId, inOrg.ownerType, inOrg.ownerId, inOrg.userId, inOrg.keyPrefix], [walletIdOf('org', o), 'org', o, member, p.prefix]);
    // The organization's KYC is its owner's, not the member's.
    assert.equal(inOrg.kycVerified, false);
    assert.throws(() => assertKyc(inOrg, true), isCode('kyc_required'));
    assert.doesNotThrow(() => assertKyc(inOrg, false));
    await b.setKyc(owner, true);
    assert.equal((await b.payerFor(p)).kycVerified, true);

    // Removed (or left): the same key now pays from the personal wallet, verified on its own.
    await fx.store.collection('memberships').deleteOne({ _id: member });
    const alone = await b.payerFor(p);
    assert.deepEqual([alone.walletId, alone.ownerType, alone.kycVerified], [walletIdOf('user', member), 'user', true]);
    await b.setKyc(member, false);
    const unverified = await b.payerFor(p);
    assert.throws(() => assertKyc(unverified, true), isCode('kyc_required'));
  });

  it('refuses a hold the spendable balance cannot cover with 402 insufficient_credit', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    const payer = await b.payerFor(principal(u));
    // Empty wallet: even a zero estimate is refused.
    await assert.rejects(
      b.hold(payer, 0, 'r'),
      (e: unknown) => isCode('insufficient_credit')(e) && (e as ApiError).status === 402 && (e as ApiError).type === 'insufficient_quota',
    );
    await fund(fx.store, payer.walletId, 5_000_000);
    const h = await b.hold(payer, 4_000_000, 'r');
    await assert.rejects(b.hold(payer, 1_000_001, 'r'), isCode('insufficient_credit'));
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc], [1_000_000, 4_000_000]);
    await b.release(h, payer, facts(0));
    assert.deepEqual([(await walletOf(fx.store, payer.walletId)).balance_uc, (await walletOf(fx.store, payer.walletId)).held_uc], [5_000_000, 0]);
  });

  it('carries fractions of a micro-cent: the debit after thousands of fractional calls equals the exact sum', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    const payer = await b.payerFor(principal(u));
    const start = 10_000 * 1_000_000; // 10,000 cents
    await fund(fx.store, payer.walletId, start);
    // Fractional prices; their exact values in pico-cents (10^-12 cent) per unit, for a BigInt oracle.
    const pricing = { input_cents_per_mtok: 0.15, output_cents_per_mtok: 0.6, cents_per_1k_chars: 1.3, cents_per_call: 0.0137 };
    const pc = { prompt: 150_000n, completion: 600_000n, char: 1_300_000_000n, call: 13_700_000_000n };
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;
    let exact = 0n;
    let naiveRounded = 0; // what per-call rounding to whole µ¢ would have charged
    const N = 4000;
    for (let batch = 0; batch < N / 200; batch++) {
      await Promise.all(
        Array.from({ length: 200 }, () => {
          const used = { promptTokens: 1 + rand(3000), completionTokens: rand(800), characters: rand(50), calls: 1 };
          exact += BigInt(used.promptTokens) * pc.prompt + BigInt(used.completionTokens) * pc.completion + BigInt(used.characters) * pc.char + pc.call;
          const cost = priceMicrocents(pricing, used);
          naiveRounded += Math.round(cost);
          return call(b, payer, Math.ceil(cost) + 10, cost, used);
        }),
      );
    }
    const w = await walletOf(fx.store, payer.walletId);
    assert.equal(w.held_uc, 0);
    // The wallet's value is balance + held + carry; what left it is the debit.
    const debitPc = BigInt(start - w.balance_uc - w.held_uc) * BigInt(PICOCENTS_PER_MICROCENT) - BigInt(w.carry_pc ?? 0);
    const diff = debitPc > exact ? debitPc - exact : exact - debitPc;
    assert.ok(diff < BigInt(PICOCENTS_PER_MICROCENT), `debit ${debitPc} p¢ vs exact ${exact} p¢: off by ${diff} p¢ (must be under 1 µ¢)`);
    assert.ok(diff < 1_000_000n * BigInt(PICOCENTS_PER_MICROCENT), 'within one cent');
    // Per-call rounding to µ¢ alone would have drifted by far more than one µ¢ here.
    const naiveDriftPc = BigInt(naiveRounded) * BigInt(PICOCENTS_PER_MICROCENT) - exact;
    assert.ok((naiveDriftPc < 0n ? -naiveDriftPc : naiveDriftPc) > BigInt(PICOCENTS_PER_MICROCENT), 'the oracle is sensitive: plain rounding drifts');
    // The usage records (rounded to µ¢ each) add up to the exact cost within half a µ¢ per call.
    await b.flush();
    const rows = await b.usage.summary({ owner: payer.walletId }, '2026-01-01', '2026-12-31', 'day');
    assert.equal(rows.totals.requests, N);
    const reportedPc = BigInt(rows.totals.cost_uc) * BigInt(PICOCENTS_PER_MICROCENT);
    assert.ok((reportedPc > exact ? reportedPc - exact : exact - reportedPc) <= BigInt(N * 500_000));
  });

  it('chargeFor rounds up and credits the exact excess back', () => {
    assert.deepEqual(chargeFor(1.05), { chargeUc: 2, carryPc: 950_000 });
    assert.deepEqual(chargeFor(7), { chargeUc: 7, carryPc: 0 });
    assert.deepEqual(chargeFor(0), { chargeUc: 0, carryPc: 0 });
    assert.deepEqual(chargeFor(123_456_789.000001), { chargeUc: 123_456_790, carryPc: 999_999 });
    assert.throws(() => chargeFor(Number.NaN), RangeError);
    assert.throws(() => chargeFor(-1), RangeError);
  });

  for (const durableWalletWrites of [false, true]) {
    it(`200 concurrent hold/settle cycles on one wallet, across two instances, never overspend (${durableWalletWrites ? 'durable' : 'lazy'} wallet writes)`, async () => {
      const [b1, b2] = [await fx.billing({ durableWalletWrites }), await fx.billing({ durableWalletWrites })];
      const owner = await user(fx.store);
      const o = await org(fx.store, owner);
      const payer = await b1.payerFor(principal(owner));
      const start = 50_000; // µ¢: room for 50 holds of 1,000 at once
      await fund(fx.store, payer.walletId, start);
      let lowest = Infinity;
      let watching = true;
      const watch = (async () => {
        while (watching) {
          const w = await walletOf(fx.store, payer.walletId);
          lowest = Math.min(lowest, w.balance_uc, w.held_uc);
          // One write moves money and records the hold: they never disagree, even mid-flight.
          assert.equal(
            w.held_uc,
            ((w.holds ?? []) as string[]).reduce((sum, t) => sum + parseHold(t)!.a, 0),
          );
          await new Promise((r) => setImmediate(r));
        }
      })();
      const outcomes = await Promise.allSettled(Array.from({ length: 200 }, (_, i) => call(i % 2 ? b1 : b2, payer, 1000, 700.5)));
      watching = false;
      await watch;
      const ok = outcomes.filter((o) => o.status === 'fulfilled').length;
      for (const o of outcomes) if (o.status === 'rejected') assert.ok(isCode('insufficient_credit')(o.reason), String(o.reason));
      assert.ok(ok >= 50 && ok < 200, `${ok} calls succeeded`);
      const w = await walletOf(fx.store, walletIdOf('org', o));
      assert.ok(lowest >= 0, `balance or held went to ${lowest}`);
      assert.equal(w.held_uc, 0);
      assert.deepEqual(w.holds, []);
      // Exact: every successful call cost 700.5 µ¢ (charged 701, 0.5 µ¢ carried back).
      assert.equal((start - w.balance_uc) * PICOCENTS_PER_MICROCENT - (w.carry_pc ?? 0), ok * 700.5 * PICOCENTS_PER_MICROCENT);
      assert.ok(w.balance_uc >= 0);
    });
  }

  it('settles or releases a hold exactly once, whatever is repeated and on whichever instance', async () => {
    const [b1, b2] = [await fx.billing(), await fx.billing()];
    const u = await user(fx.store);
    const payer = await b1.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 10_000);
    const hold = await b1.hold(payer, 1000, 'r');
    await Promise.all([b1.settle(hold, payer, facts(400)), b2.settle({ ...hold }, payer, facts(400)), b2.release({ ...hold }, payer, facts(0))]);
    await b1.settle(hold, payer, facts(400));
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc], [9_600, 0]);
    await Promise.all([b1.flush(), b2.flush()]);
    assert.equal(await fx.store.collection('usage_records').countDocuments({ owner: payer.walletId }), 1);
  });

  it('a named hold is taken once however often it is asked for (a replayed step), and a dropped hold leaves no record', async () => {
    const [b1, b2] = [await fx.billing(), await fx.billing()];
    const u = await user(fx.store);
    const payer = await b1.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 10_000);
    const first = await b1.hold(payer, 100, 'job', { custodial: true });
    const named = { custodial: true, id: 'job:decoded', expiresAt: 2_000_000_000_000 };
    const holds = await Promise.all([b1.hold(payer, 3000, 'job', named), b2.hold(payer, 3000, 'job', named), b1.hold(payer, 3000, 'job', named)]);
    assert.equal(new Set(holds.map((h) => h.id)).size, 1, 'the same hold every time');
    let w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc], [6_900, 3_100]);
    await Promise.all([b1.drop(first), b2.drop({ ...first })]);
    await b1.settle(holds[0]!, payer, facts(2500));
    w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc], [7_500, 0]);
    await Promise.all([b1.flush(), b2.flush()]);
    assert.equal(await fx.store.collection('usage_records').countDocuments({ owner: payer.walletId }), 1, 'the drop recorded nothing');
    // A name is one token of the stored hold: one with a space is refused.
    await assert.rejects(b1.hold(payer, 3000, 'job', { ...named, id: 'bad id' }), RangeError);
  });

  it('settles for an answer without making it wait: the very next wallet read shows the debit, and close() waits for it', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    const payer = await b.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 10_000);
    const hold = await b.hold(payer, 1000, 'r');
    await b.settleForAnswer(hold, payer, facts(250));
    // It resolved before the write was applied; the read must not show the hold still open.
    const w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc, w.holds], [9_750, 0, []]);

    const second = await b.hold(payer, 1000, 'r2');
    await b.settleForAnswer(second, payer, facts(100, { requestId: 'req_background_close' }));
    await b.close(); // waits for the settle, then writes the usage buffer
    assert.equal((await walletOf(fx.store, payer.walletId)).balance_uc, 9_650);
    assert.equal(await fx.store.collection('usage_records').countDocuments({ request_id: 'req_background_close' }), 1);
  });

  it('caps a settle at its hold: an absurd reported usage never overspends', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    const payer = await b.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 10_000);
    const hold = await b.hold(payer, 1000, 'r');
    await b.settle(hold, payer, facts(1e12));
    assert.equal((await walletOf(fx.store, payer.walletId)).balance_uc, 9_000);
  });

  it('returns holds once after their expiry while their instance lives on (calls that outlived them); a late settle is still charged once', async () => {
    // Leases far longer than the test: every instance here stays alive, holds go by expiry alone.
    const crashed = await fx.billing({ holdTtlSeconds: 60, instanceLeaseSeconds: 3600 });
    const u = await user(fx.store);
    const payer = await crashed.payerFor(principal(u));
    await fund(fx.store, payer.walletId, 10_000);
    const h1 = await crashed.hold(payer, 3000, 'r1');
    fx.clock.t += 30_000;
    const h2 = await crashed.hold(payer, 2000, 'r2');
    const [s1, s2] = [
      await fx.billing({ holdTtlSeconds: 60, instanceLeaseSeconds: 3600 }),
      await fx.billing({ holdTtlSeconds: 60, instanceLeaseSeconds: 3600 }),
    ];
    assert.equal(await s1.sweepHolds(), 0, 'nothing expired yet');
    fx.clock.t += 31_000; // h1 expired, h2 not
    assert.deepEqual((await Promise.all([s1.sweepHolds(), s2.sweepHolds()])).sort(), [0, 1]);
    let w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc], [8_000, 2_000]);
    fx.clock.t += 30_000; // h2 expired: the sweeper still finds it after re-indexing the wallet
    assert.equal(await s1.sweepHolds(), 1);
    w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc, w.holds], [10_000, 0, []]);
    // The call behind h1 was still running after all: it is charged once, without a hold.
    await crashed.settle(h1, payer, facts(2500));
    await s2.settle(h1, payer, facts(2500));
    await crashed.release(h2, payer, facts(0));
    w = await walletOf(fx.store, payer.walletId);
    assert.deepEqual([w.balance_uc, w.held_uc], [7_500, 0]);
  });

  it('adopts the hold records of earlier versions into their wallets once, and returns them when expired', async () => {
    const u = await user(fx.store);
    const walletId = walletIdOf('user', u);
    await fund(fx.store, walletId, 10_000);
    // What an earlier version left: 700 µ¢ counted as held, with its record in billing_holds.
    await fx.store.collection('wallets').updateOne({ _id: walletId }, { $inc: { balance_uc: -700, held_uc: 700 } });
    await fx.store
      .collection('billing_holds')
      .insertOne({ _id: 'hlegacy', wallet_id: walletId, amount_uc: 700, expires_at: new Date(fx.clock.t + 1000), request_id: 'req_old' });
    const [b1] = [await fx.billing(), await fx.billing()]; // two instances starting: adopted once
    let w = await walletOf(fx.store, walletId);
    assert.deepEqual([w.balance_uc, w.held_uc, w.holds], [9_300, 700, [`hlegacy 700 ${fx.clock.t + 1000} req_old`]]);
    assert.equal(await fx.store.collection('billing_holds').countDocuments({}), 0);
    fx.clock.t += 1000;
    assert.equal(await b1.sweepHolds(), 1);
    w = await walletOf(fx.store, walletId);
    assert.deepEqual([w.balance_uc, w.held_uc, w.holds], [10_000, 0, []]);
  });

  it('emits low_balance once per crossing of the threshold, again after a top-up lifts the balance', async () => {
    const b = await fx.billing();
    const owner = await user(fx.store);
    const o = await org(fx.store, owner);
    const payer = await b.payerFor(principal(owner));
    await b.setLowBalanceThreshold(owner, 100);
    await fund(fx.store, payer.walletId, 160 * 1_000_000);
    const low = () => fx.events.filter((e) => e.event === 'low_balance' && e.owner.id === o);
    await call(b, payer, 30_000_000, 30_000_000); // 130 cents: above
    assert.equal(low().length, 0);
    await Promise.all(Array.from({ length: 4 }, () => call(b, payer, 20_000_000, 20_000_000))); // 50 cents: crossed once
    assert.equal(low().length, 1);
    assert.deepEqual(low()[0]!.fields.org_id, o);
    assert.equal(low()[0]!.fields.threshold_cents, 100);
    assert.ok((low()[0]!.fields.balance_cents as number) < 100);
    await call(b, payer, 10_000_000, 10_000_000); // still below: no new event
    assert.equal(low().length, 1);
    await b.topup({ org_id: o, amount_cents: 200 }); // 240 cents
    await call(b, payer, 150_000_000, 150_000_000); // 90 cents: crossed again
    assert.equal(low().length, 2);
    assert.equal(low()[1]!.fields.balance_cents, 90);
  });

  it('migrates balance_cents wallets to micro-cents once', async () => {
    await fx.store.collection('wallets').insertOne({ _id: 'user:424242', owner_type: 'user', owner_id: 424242, balance_cents: 123.5, created_at: new Date(0) });
    await fx.store.collection('migrations').deleteOne({ _id: 'wallets_microcents' });
    await Promise.all([fx.billing(), fx.billing()]);
    const w = await walletOf(fx.store, 'user:424242');
    assert.deepEqual([w.balance_uc, w.held_uc, 'balance_cents' in w], [123_500_000, 0, false]);
  });

  it('prices every unit and adds calendar months without drift', () => {
    const p = { input_cents_per_mtok: 100, output_cents_per_mtok: 300, cents_per_minute: 1.2, cents_per_1k_chars: 1.5, cents_per_call: 0.5 };
    assert.equal(priceMicrocents(p, { promptTokens: 10, completionTokens: 2 }), 1_600);
    assert.equal(priceMicrocents(p, { seconds: 30 }), 600_000);
    assert.equal(priceMicrocents(p, { characters: 2000 }), 3_000_000);
    assert.equal(priceMicrocents(p, { calls: 2 }), 1_000_000);
    const jan31 = new Date(Date.UTC(2026, 0, 31, 9));
    assert.equal(addMonths(jan31, 1).toISOString(), '2026-02-28T09:00:00.000Z');
    assert.equal(addMonths(jan31, 2).toISOString(), '2026-03-31T09:00:00.000Z');
    assert.equal(addMonths(jan31, 13).toISOString(), '2027-02-28T09:00:00.000Z');
  });
});
