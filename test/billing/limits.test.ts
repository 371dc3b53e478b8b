// Per-key limits counted in the store: two billing instances (two gateway processes) on one store
// enforce one RPM, one TPD and one CPD limit, answer 429 with the spec's bare body and headers, and emit one
// rate_limit_exceeded event per key, limit and window.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, toEnvelope } from '../../src/http/errors.ts';
import { call, fixture, limitedKey, principal, user, walletOf, type Fixture } from './helpers.ts';

describe('per-key limits', () => {
  let fx: Fixture;
  before(async () => {
    fx = await fixture(Date.UTC(2026, 0, 15, 12, 0, 10));
  });
  after(() => fx.close());

  const limited = (e: unknown) => e instanceof ApiError && e.code === 'rate_limit_exceeded' && e.status === 429;

  it('rpm: a fixed 60 s window shared by two instances, 429 with a bare {detail}, Retry-After and the limit', async () => {
    const [b1, b2] = [await fx.billing(), await fx.billing()];
    const u = await user(fx.store);
    const p = principal(u, { rpm: 5 });
    const outcomes = await Promise.allSettled(Array.from({ length: 12 }, (_, i) => (i % 2 ? b1 : b2).admit(p)));
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 5, 'the limit is not multiplied by the number of instances');
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => o.reason as ApiError);
    assert.equal(refused.length, 7);
    for (const e of refused) assert.ok(limited(e), String(e));
    const e = refused[0]!;
    assert.deepEqual(Object.keys(toEnvelope(e, 'req_1')), ['detail']);
    assert.match(e.message, /per-minute limit/);
    assert.equal(e.options.headers?.['x-ratelimit-limit-rpm'], '5');
    assert.equal(e.options.headers?.['retry-after'], '50'); // 12:00:10 → the window resets at 12:01:00

    const events = fx.events.filter((ev) => ev.event === 'rate_limit_exceeded' && ev.fields.key_prefix === p.prefix);
    assert.equal(events.length, 1, 'one event per key, limit and window, across instances');
    assert.deepEqual(events[0]!.fields, { key_prefix: p.prefix, user_id: u, limit_type: 'rpm', limit: 5, used: events[0]!.fields.used });
    assert.ok((events[0]!.fields.used as number) > 5);
    assert.deepEqual(events[0]!.owner, { type: 'user', id: u });

    fx.clock.t += 50_000; // the next window
    await b1.admit(p);
    for (let i = 0; i < 4; i++) await b2.admit(p);
    await assert.rejects(b1.admit(p), limited);
    assert.equal(fx.events.filter((ev) => ev.event === 'rate_limit_exceeded' && ev.fields.key_prefix === p.prefix).length, 2);
  });

  it('a key without limits is never refused; another key has its own window', async () => {
    const b = await fx.billing();
    const u = await user(fx.store);
    const free = principal(u);
    for (let i = 0; i < 50; i++) await b.admit(free);
    const a = principal(u, { rpm: 1 });
    const c = principal(u, { rpm: 1 });
    await b.admit(a);
    await b.admit(c);
    await assert.rejects(b.admit(a), limited);
  });

  it('tpd: prompt plus completion tokens per UTC day, counted at settle; resets at midnight UTC', async () => {
    const { b1, b2, p, payer } = await limitedKey(fx, { tpd: 1000 });
    await b1.admit(p);
    await call(b1, payer, 100, 10, { promptTokens: 400, completionTokens: 200 });
    await b2.admit(p);
    await call(b2, payer, 100, 10, { promptTokens: 300, completionTokens: 200 });
    await Promise.all([b1.flush(), b2.flush()]);
    const err = await b2.admit(p).then(
      () => assert.fail('admitted over the daily limit'),
      (e: unknown) => e as ApiError,
    );
    assert.ok(limited(err));
    assert.deepEqual(toEnvelope(err, 'r'), { detail: err.message });
    assert.match(err.message, /daily limit/);
    assert.match(err.message, /midnight UTC/);
    assert.equal(err.options.headers?.['x-ratelimit-limit-tpd'], '1000');
    assert.equal(err.options.headers?.['x-ratelimit-used-tpd'], '1100');
    await assert.rejects(b1.admit(p), limited);
    const events = fx.events.filter((ev) => ev.event === 'rate_limit_exceeded' && ev.fields.key_prefix === p.prefix);
    assert.equal(events.length, 1);
    assert.deepEqual([events[0]!.fields.limit_type, events[0]!.fields.limit, events[0]!.fields.used], ['tpd', 1000, 1100]);

    const now = new Date(fx.clock.t);
    fx.clock.t = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1, 0, 0, 1);
    await b1.admit(p);
  });

  it('cpd: spend in cents per UTC day across instances, reserved at the hold; a cap set mid-day counts the day so far', async () => {
    const { b1, b2, u, p, payer } = await limitedKey(fx, { cpd: 1 });
    const standing = await b1.admit(p);
    assert.deepEqual(standing, { 'x-ratelimit-limit-cpd': '1', 'x-ratelimit-used-cpd': '0', 'x-ratelimit-remaining-cpd': '1' });
    await call(b1, payer, 1_000_000, 600_000); // holds 1 ¢, costs 0.6 ¢
    await b1.flush();
    assert.deepEqual(await b2.admit(p), { 'x-ratelimit-limit-cpd': '1', 'x-ratelimit-used-cpd': '0.6', 'x-ratelimit-remaining-cpd': '0.4' });
    // A call that may cost more than the day has left is refused before it runs, and takes nothing.
    const short = await call(b2, payer, 500_000, 100).then(
      () => assert.fail('a call that may pass the daily spend limit was let through'),
      (e: unknown) => e as ApiError,
    );
    assert.ok(limited(short));
    assert.deepEqual(toEnvelope(short, 'r'), { detail: short.message });
    assert.match(short.message, /daily spend limit of 1 cents has 0\.4 left today .* may cost up to 0\.5; it resets at midnight UTC/);
    assert.deepEqual([short.options.headers?.['x-ratelimit-limit-cpd'], short.options.headers?.['x-ratelimit-used-cpd']], ['1', '0.6']);
    assert.equal((await walletOf(fx.store, payer.walletId)).held_uc, 0, 'the wallet was not held');
    await call(b2, payer, 400_000, 400_000); // what is left, exactly
    await b2.flush();
    const err = await b1.admit(p).then(
      () => assert.fail('admitted over the daily spend limit'),
      (e: unknown) => e as ApiError,
    );
    assert.ok(limited(err));
    assert.deepEqual(toEnvelope(err, 'r'), { detail: err.message });
    assert.match(err.message, /daily spend limit of 1 cents was reached \(1 spent today\)/);
    assert.deepEqual([err.options.headers?.['x-ratelimit-limit-cpd'], err.options.headers?.['x-ratelimit-used-cpd']], ['1', '1']);
    await assert.rejects(b2.admit(p), limited);
    const events = fx.events.filter((ev) => ev.event === 'rate_limit_exceeded' && ev.fields.key_prefix === p.prefix);
    assert.deepEqual(
      events.map((ev) => [ev.fields.limit_type, ev.fields.limit, ev.fields.used]),
      [['cpd', 1, 0.6]],
      'one event per key, limit and window: the first refusal',
    );

    // Spend is counted for every key, so a cap set during the day knows what was already spent.
    const q = principal(u);
    await b1.admit(q);
    await call(b1, await b1.payerFor(q), 3_000_000, 2_500_000);
    await b1.flush();
    await assert.rejects(b1.admit({ ...q, cpd: 2 }), limited);
    await b1.admit({ ...q, cpd: 3 });

    const now = new Date(fx.clock.t);
    fx.clock.t = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1, 0, 0, 1);
    assert.equal((await b1.admit(p))?.['x-ratelimit-used-cpd'], '0', 'a new UTC day');
  });

  it('cpm: spend in cents per UTC calendar month, across days; resets on the 1st', async () => {
    const { b1, b2, p, payer } = await limitedKey(fx, { cpm: 2, cpd: 100 });
    const start = new Date(fx.clock.t);
    await call(b1, payer, 1_000_000, 900_000);
    await b1.flush();
    fx.clock.t += 86_400_000; // the next day: the daily counter starts again, the monthly does not
    assert.deepEqual(
      Object.entries((await b2.admit(p))!).filter(([h]) => h.endsWith('-cpm') || h === 'x-ratelimit-used-cpd'),
      [
        ['x-ratelimit-used-cpd', '0'],
        ['x-ratelimit-limit-cpm', '2'],
        ['x-ratelimit-used-cpm', '0.9'],
        ['x-ratelimit-remaining-cpm', '1.1'],
      ],
    );
    await assert.rejects(call(b2, payer, 1_100_001, 1), limited, 'may pass the monthly cap by 1 µ¢');
    await call(b2, payer, 1_100_000, 1_100_000);
    await b2.flush();
    const err = await b1.admit(p).then(
      () => assert.fail('admitted over the monthly spend limit'),
      (e: unknown) => e as ApiError,
    );
    assert.ok(limited(err));
    assert.match(err.message, /monthly spend limit of 2 cents was reached \(2 spent this month\); it resets on the 1st/);
    const firstOfNext = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
    assert.equal(err.options.headers?.['retry-after'], String(Math.ceil((firstOfNext - fx.clock.t) / 1000)), 'until the 1st of next month, 00:00 UTC');
    assert.deepEqual([err.options.headers?.['x-ratelimit-limit-cpm'], err.options.headers?.['x-ratelimit-used-cpm']], ['2', '2']);
    assert.deepEqual(
      fx.events.filter((ev) => ev.event === 'rate_limit_exceeded' && ev.fields.key_prefix === p.prefix).map((ev) => ev.fields.limit_type),
      ['cpm'],
    );
    fx.clock.t = firstOfNext + 1000;
    assert.equal((await b1.admit(p))?.['x-ratelimit-used-cpm'], '0', 'a new month');
  });
});
