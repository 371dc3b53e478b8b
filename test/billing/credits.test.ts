// Money coming in: top-ups credited once per reference (also under concurrency and after a crash
// mid-way), and subscriptions credited once per cycle however many instances sweep.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.ts';
import { fixture, org, user, walletOf, type Fixture } from './helpers.ts';

const balanceCents = async (fx: Fixture, walletId: string) => {
  const w = await walletOf(fx.store, walletId);
  return (w.balance_uc + w.held_uc) / 1_000_000;
};

describe('top-ups', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture();
  });
  after(() => fx.close());

  it('credits once per reference, even when the same reference arrives 20 times at once on two instances', async () => {
    const [b1, b2] = [await fx.billing(), await fx.billing()];
    const u = await user(fx.store);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? b1 : b2).topup({ user_id: u, amount_cents: 500, reference: 'wire-0001' })));
    assert.equal(results.filter((r) => r.created).length, 1);
    assert.equal(new Set(results.map((r) => r.topup.id)).size, 1);
    assert.equal(await balanceCents(fx, `user:${u}`), 500);
    const events = fx.events.filter((e) => e.event === 'topup' && e.owner.id === u);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.fields, { user_id: u, amount_cents: 500, new_balance_cents: 500 });
    const again = await b1.topup({ user_id: u, amount_cents: 500, reference: 'wire-0001' });
    assert.deepEqual([again.created, again.topup.status, again.topup.new_balance_cents], [false, 'credited', 500]);
    // Without a reference every top-up counts; a reused reference with other terms is refused.
    await b1.topup({ user_id: u, amount_cents: 7 });
    await b1.topup({ user_id: u, amount_cents: 7 });
    assert.equal(await balanceCents(fx, `user:${u}`), 514);
    await assert.rejects(b1.topup({ user_id: u, amount_cents: 501, reference: 'wire-0001' }), (e: unknown) => e instanceof ApiError && e.code === 'conflict');
  });

  it('credits an organization and names it org_id in the event; unknown accounts are 404', async () => {
    const b = await fx.billing();
    const o = await org(fx.store, await user(fx.store));
    const { topup } = await b.topup({ org_id: o, amount_cents: 250 });
    assert.deepEqual([topup.owner_type, topup.org_id, topup.new_balance_cents], ['org', o, 250]);
    assert.deepEqual(fx.events.find((e) => e.event === 'topup' && e.owner.type === 'org' && e.owner.id === o)?.fields, {
      org_id: o,
      amount_cents: 250,
      new_balance_cents: 250,
    });
    await assert.rejects(b.topup({ user_id: 999_999, amount_cents: 1 }), (e: unknown) => e instanceof ApiError && e.code === 'not_found');
    await assert.rejects(b.topup({ user_id: 1, org_id: o, amount_cents: 1 }), (e: unknown) => e instanceof ApiError && e.code === 'invalid_request');
  });

  it('finishes a top-up a crash left pending, crediting it once even if the wallet was already credited', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    const topups = fx.store.collection('topups');
    const old = new Date(fx.clock.t - 120_000);
    // Crashed after writing the top-up, before crediting.
    await topups.insertOne({
      _id: 'tu_crash1',
      owner_type: 'user',
      owner_id: u,
      wallet_id: `user:${u}`,
      amount_cents: 40,
      reference: 'r-crash1',
      kind: 'manual',
      state: 'pending',
      created_at: old,
    });
    // Crashed after crediting the wallet, before marking the top-up.
    await topups.insertOne({
      _id: 'tu_crash2',
      owner_type: 'user',
      owner_id: u,
      wallet_id: `user:${u}`,
      amount_cents: 2,
      kind: 'manual',
      state: 'pending',
      created_at: old,
    });
    await b.wallets.credit(`user:${u}`, 'tu_crash2', 2_000_000);
    assert.equal(await balanceCents(fx, `user:${u}`), 2);
    await b.sweepHolds();
    await b.sweepHolds();
    assert.equal(await balanceCents(fx, `user:${u}`), 42);
    assert.deepEqual(
      (await topups.find({ owner_id: u }, { sort: { _id: 1 } })).map((t) => t.state),
      ['credited', 'credited'],
    );
    // The retried reference answers with the original.
    const retry = await b.topup({ user_id: u, amount_cents: 40, reference: 'r-crash1' });
    assert.deepEqual([retry.created, retry.topup.id], [false, 'tu_crash1']);
    assert.equal(await balanceCents(fx, `user:${u}`), 42);
  });
});

describe('subscriptions', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture(Date.UTC(2026, 0, 31, 10, 0, 0));
  });
  after(() => fx.close());
  const plans = [
    { id: 'starter', monthly_credit_cents: 1000 },
    { id: 'pro', name: 'Pro', monthly_credit_cents: 10_000 },
  ];

  it('credits the first cycle at start and each renewal exactly once, with two instances sweeping', async () => {
    const [b1, b2] = [await fx.billing({ plans }), await fx.billing({ plans })];
    const owner = await user(fx.store);
    const o = await org(fx.store, owner);
    const w = `org:${o}`;
    const started = await b1.setSubscription('org', o, 'starter');
    assert.equal(started.started, true);
    assert.equal(await balanceCents(fx, w), 1000);
    assert.deepEqual(await b1.subscriptionView(owner), {
      owner_type: 'org',
      owner_id: o,
      status: 'active',
      plan: 'starter',
      monthly_credit_cents: 1000,
      current_period_start: '2026-01-31T10:00:00.000Z',
      next_renewal_at: '2026-02-28T10:00:00.000Z',
      cycles_credited: 1,
    });
    // The same plan again changes nothing; nothing is due yet.
    assert.equal((await b2.setSubscription('org', o, 'starter')).started, false);
    await Promise.all([b1.renewSubscriptions(), b2.renewSubscriptions()]);
    assert.equal(await balanceCents(fx, w), 1000);

    fx.clock.t = Date.UTC(2026, 1, 28, 10, 0, 0);
    await Promise.all([b1.renewSubscriptions(), b2.renewSubscriptions(), b1.renewSubscriptions()]);
    assert.equal(await balanceCents(fx, w), 2000);
    // Down for three months: each missed cycle is credited once (Mar 31, Apr 30, May 31).
    fx.clock.t = Date.UTC(2026, 4, 31, 10, 0, 0);
    await Promise.all([b1.renewSubscriptions(), b2.renewSubscriptions()]);
    assert.equal(await balanceCents(fx, w), 5000);
    assert.equal((await b1.subscriptionView(owner)).next_renewal_at, '2026-06-30T10:00:00.000Z');

    // A new plan starts a new cycle count and credits its first cycle; cancel stops renewals.
    await b1.setSubscription('org', o, 'pro');
    assert.equal(await balanceCents(fx, w), 15_000);
    await b1.setSubscription('org', o, null);
    fx.clock.t = Date.UTC(2026, 11, 1);
    await b1.renewSubscriptions();
    assert.equal(await balanceCents(fx, w), 15_000);
    assert.equal((await b1.subscriptionView(owner)).status, 'canceled');
    const credits = await fx.store.collection('topups').countDocuments({ wallet_id: w, kind: 'subscription' });
    assert.equal(credits, 6); // five starter cycles, one pro
  });

  it('attaches to a user; an unknown plan or account is refused; no subscription reads as none', async () => {
    const b = await fx.billing({ plans });
    const u = await user(fx.store);
    assert.equal((await b.subscriptionView(u)).status, 'none');
    await assert.rejects(b.setSubscription('user', u, 'platinum'), (e: unknown) => e instanceof ApiError && e.code === 'invalid_request');
    await assert.rejects(b.setSubscription('user', 987_654, 'starter'), (e: unknown) => e instanceof ApiError && e.code === 'not_found');
    await b.setSubscription('user', u, 'starter');
    assert.equal(await balanceCents(fx, `user:${u}`), 1000);
  });
});

describe('the wallet limit (2^53 µ¢ is where arithmetic stops being exact)', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture();
  });
  after(() => fx.close());
  const limited = (e: unknown) => e instanceof ApiError && e.code === 'wallet_limit_exceeded' && e.status === 409 && /9,000,000,000 cents/.test(e.message);

  it('refuses a top-up or a subscription credit that would pass 9,000,000,000 cents; debits at the limit stay exact', async () => {
    const b = await fx.billing({ plans: [{ id: 'big', monthly_credit_cents: 1_000_000_000 }] });
    const u = await user(fx.store);
    const w = `user:${u}`;
    for (let i = 0; i < 9; i++) await b.topup({ user_id: u, amount_cents: 1_000_000_000, reference: `big-${i}` });
    assert.equal(await balanceCents(fx, w), 9_000_000_000);
    // One more cent would pass the limit: refused, not recorded, and the reference stays free.
    await assert.rejects(b.topup({ user_id: u, amount_cents: 1, reference: 'one-more' }), limited);
    assert.equal(await fx.store.collection('topups').countDocuments({ reference: 'one-more' }), 0);
    await assert.rejects(b.topup({ user_id: u, amount_cents: 1_000_000_000 }), limited);
    await assert.rejects(b.setSubscription('user', u, 'big'), limited);
    assert.equal((await b.subscriptionView(u)).status, 'none');
    assert.equal(await balanceCents(fx, w), 9_000_000_000);

    // An 11 µ¢ call is debited 11 µ¢ (past 2^53 it was debited 12).
    const payer = await b.payerFor({ keyId: 1, jti: 'j', prefix: 'sk-live-x', userId: u, scopes: ['*'], rpm: null, tpd: null, cpd: null, cpm: null });
    const before = (await walletOf(fx.store, w)).balance_uc;
    const hold = await b.hold(payer, 100, 'req');
    await b.settle(hold, payer, { requestId: 'req', model: 'm', modelType: 'llm', route: null, costMicrocents: 11, status: 'ok', latencyMs: 1 });
    assert.equal(before - (await walletOf(fx.store, w)).balance_uc, 11);
    // 11 µ¢ spent leaves less than a cent of room.
    await b.topup({ user_id: u, amount_cents: 1, reference: 'still-full' }).then(
      () => assert.fail('1 cent more than the room left must be refused'),
      (e: unknown) => assert.ok(limited(e)),
    );
    // A hold larger than any wallet can hold is refused as insufficient credit, never written.
    await assert.rejects(b.hold(payer, 2 ** 60, 'huge'), (e: unknown) => e instanceof ApiError && e.code === 'insufficient_credit');
  });
});
