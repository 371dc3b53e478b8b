// The Meter on the real billing service and model catalog (embedded store): a refused request
// holds nothing; a call settles or releases exactly once; released work is free. An actor's call,
// saved as JSON and resumed (on another instance too), settles, releases, is covered by a larger
// hold or held again for its next part, each exactly once however often a step replays. A key's token
// window that refuses a bound's reservation gets the exact count once more, as the wallet does.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { walletIdOf } from '../../src/billing/money.ts';
import { ApiError } from '../../src/errors.ts';
import { Meter } from '../../src/metering/meter.ts';
import { ModelCatalog } from '../../src/models/catalog.ts';
import { PROVIDER_NAMES } from '../../src/providers/index.ts';
import { fixture, fund, principal, user, walletOf } from '../billing/helpers.ts';

async function setup() {
  const f = await fixture();
  const billing = await f.billing();
  const models = new ModelCatalog(f.store, PROVIDER_NAMES, f.clock.now);
  // An intent model: served locally, so it needs no upstream route.
  await models.seed([{ id: 'm-1', type: 'intent', owned_by: 'gateway', languages: ['en-IN'], pricing: { cents_per_call: 0.1 }, routes: [] }]);
  const meter = new Meter({ billing, models, assertKyc: (p, k) => billing.assertKyc(p, k), now: f.clock.now });
  const id = await user(f.store);
  const wallet = walletIdOf('user', id);
  await fund(f.store, wallet, 1_000_000);
  return { f, billing, meter, who: principal(id), wallet };
}

test('a request its capability refuses holds nothing; a held call settles once, later settles and releases are no-ops', async (t) => {
  const { f, meter, who, wallet } = await setup();
  t.after(() => f.close());
  await assert.rejects(
    meter.begin(who, {
      model: 'm-1',
      type: 'intent',
      requestId: 'r0',
      check: () => {
        throw new ApiError('context_length_exceeded', 'too long');
      },
      estimate: () => 500,
    }),
    (err: unknown) => err instanceof ApiError && err.code === 'context_length_exceeded',
  );
  assert.equal((await walletOf(f.store, wallet)).held_uc, 0, 'nothing held for a refused request');
  await assert.rejects(
    meter.begin(who, { model: 'm-1', type: 'llm', requestId: 'r0', estimate: () => 1 }),
    (err: unknown) => err instanceof ApiError && err.code === 'model_not_found',
  );

  const call = await meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'r1', check: () => 7, estimate: (_m, n) => n * 100 });
  assert.equal(call.checked, 7);
  assert.equal((await walletOf(f.store, wallet)).held_uc, 700);
  await call.settle({ route: null, promptTokens: 3, completionTokens: 1, costMicrocents: 400, status: 'ok' });
  await call.settle({ route: null, promptTokens: 3, completionTokens: 1, costMicrocents: 400, status: 'ok' });
  await call.release('upstream_failed');
  const w = await walletOf(f.store, wallet);
  assert.equal(w.balance_uc, 1_000_000 - 400, 'charged once, the rest of the hold returned');
  assert.equal(w.held_uc, 0);
});

test('released work is free: the whole hold comes back and a later settle charges nothing', async (t) => {
  const { f, meter, who, wallet } = await setup();
  t.after(() => f.close());
  const call = await meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'r2', estimate: () => 900 });
  await call.release('client_closed', { promptTokens: 0, completionTokens: 0 });
  await call.settle({ route: null, costMicrocents: 900, status: 'ok' });
  const w = await walletOf(f.store, wallet);
  assert.equal(w.balance_uc, 1_000_000);
  assert.equal(w.held_uc, 0);
});

/** A saved call as an actor keeps it: through JSON, as a snapshot does. */
const throughJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

test('a saved call resumed on another instance settles there, once: a replay on either instance charges nothing more', async (t) => {
  const { f, meter, who, wallet } = await setup();
  t.after(() => f.close());
  const call = await meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'job-1', estimate: () => 5_000, custodial: true });
  const saved = throughJson(call.saved());
  assert.deepEqual(Object.keys(saved).sort(), ['hold', 'model', 'modelType', 'payer', 'requestId', 'startedAt']);
  f.clock.t += 1_500;
  // The process that began it is gone; another instance (its own billing and Meter) resumes the call.
  const billingB = await f.billing();
  const meterB = new Meter({ billing: billingB, models: new ModelCatalog(f.store, PROVIDER_NAMES, f.clock.now), assertKyc: () => {}, now: f.clock.now });
  const resumed = meterB.resume(saved);
  assert.equal(resumed.limitMicrocents, 5_000);
  await resumed.settle({ route: null, seconds: 90, costMicrocents: 1_234.5, status: 'ok' });
  // A step replayed after a crash resumes the same saved call again, here and on the first instance.
  await meterB.resume(saved).settle({ route: null, seconds: 90, costMicrocents: 1_234.5, status: 'ok' });
  await meter.resume(saved).settle({ route: null, seconds: 90, costMicrocents: 1_234.5, status: 'ok' });
  await meter.resume(saved).release('upstream_failed');
  const w = await walletOf(f.store, wallet);
  assert.equal(w.balance_uc, 1_000_000 - 1_235, 'charged once, rounded up to a whole µ¢');
  assert.equal(w.held_uc, 0);
  await billingB.flush();
  const records = await f.store.collection('usage_records').find({ request_id: 'job-1' });
  assert.equal(records.length, 1, 'one usage record');
  assert.deepEqual(
    {
      model: records[0]!.model,
      model_type: records[0]!.model_type,
      seconds: records[0]!.seconds,
      status: records[0]!.status,
      latency_ms: records[0]!.latency_ms,
    },
    { model: 'm-1', model_type: 'intent', seconds: 90, status: 'ok', latency_ms: 1_500 },
    'the record names the call as begun, its latency from its start',
  );
});

test('a call released after a restore is free, and a later settle of it charges nothing', async (t) => {
  const { f, meter, who, wallet } = await setup();
  t.after(() => f.close());
  const call = await meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'job-2', estimate: () => 8_000, custodial: true });
  const saved = throughJson(call.saved());
  assert.equal((await walletOf(f.store, wallet)).held_uc, 8_000);
  await meter.resume(saved).release('upstream_failed', { seconds: 0 });
  await meter.resume(saved).settle({ route: null, seconds: 10, costMicrocents: 8_000, status: 'ok' });
  const w = await walletOf(f.store, wallet);
  assert.deepEqual([w.balance_uc, w.held_uc], [1_000_000, 0]);
});

test('cover replaces a hold by a larger named one, once however often it is replayed; the covering call settles in its place', async (t) => {
  const { f, billing, meter, who, wallet } = await setup();
  t.after(() => f.close());
  const call = await meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'job-3', estimate: () => 1_000, custodial: true });
  const saved = throughJson(call.saved());
  const named = { id: 'job-3:decoded', expiresAt: f.clock.t + 3_600_000 };
  const covering = await meter.resume(saved).cover(20_000, named);
  // A replay (the step's record lost in a crash) answers the same hold, and holds nothing more.
  const again = await meter.resume(saved).cover(20_000, named);
  assert.deepEqual(again, covering);
  assert.equal(covering.hold.amountMicrocents, 20_000);
  assert.deepEqual({ ...covering, hold: saved.hold }, saved, 'the same call on another hold');
  assert.equal((await walletOf(f.store, wallet)).held_uc, 21_000);
  // The replaced hold is returned whole, unrecorded, however many times it is dropped.
  await meter.resume(saved).drop();
  await meter.resume(saved).drop();
  assert.deepEqual([(await walletOf(f.store, wallet)).balance_uc, (await walletOf(f.store, wallet)).held_uc], [1_000_000 - 20_000, 20_000]);
  await meter.resume(throughJson(covering)).settle({ route: null, seconds: 600, costMicrocents: 12_000, status: 'ok' });
  await meter.resume(throughJson(covering)).settle({ route: null, seconds: 600, costMicrocents: 12_000, status: 'ok' });
  const w = await walletOf(f.store, wallet);
  assert.deepEqual([w.balance_uc, w.held_uc], [1_000_000 - 12_000, 0]);
  await billing.flush();
  const records = await f.store.collection('usage_records').find({ request_id: 'job-3' });
  assert.deepEqual(
    records.map((r) => r.cost_uc),
    [12_000],
    'one record: the dropped hold has none',
  );
});

test('a call billed in parts holds each next part through the call; each part settles its own hold, once', async (t) => {
  const { f, meter, who, wallet } = await setup();
  t.after(() => f.close());
  const call = await meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'rts-1', estimate: () => 3_000, custodial: true });
  const first = throughJson(call.saved());
  await meter.resume(first).settle({ route: null, seconds: 60, costMicrocents: 3_000, status: 'ok' });
  const second = await meter.resume(first).holdNext(3_000, { holdRequestId: 'rts-1:2', ttlMs: 600_000 });
  assert.notEqual(second.hold.id, first.hold.id);
  assert.deepEqual({ ...second, hold: first.hold }, first, 'the same call on the next hold');
  assert.ok(
    (await walletOf(f.store, wallet)).holds.some((h: string) => h.includes(' rts-1:2')),
    'the hold traces its part',
  );
  await meter.resume(second).settle({ route: null, seconds: 20, costMicrocents: 1_000, status: 'ok' });
  await meter.resume(second).release('ok');
  const w = await walletOf(f.store, wallet);
  assert.deepEqual([w.balance_uc, w.held_uc], [1_000_000 - 4_000, 0]);
  await assert.rejects(
    meter.resume(second).holdNext(2_000_000, { holdRequestId: 'rts-1:3', ttlMs: 600_000 }),
    (err: unknown) => err instanceof ApiError && err.code === 'insufficient_credit',
  );
});

test("a key's token window refusing the bound's reservation gets one more try with the exact count, and the call reserves what it may use", async (t) => {
  const { f, billing, meter, wallet } = await setup();
  t.after(() => f.close());
  const capped = principal(Number(wallet.split(':')[1]), { tpd: 100 });
  let exact = false;
  const begin = (requestId: string) =>
    meter.begin(capped, {
      model: 'm-1',
      type: 'intent',
      requestId,
      check: () => ({}),
      estimate: () => 100,
      tokens: () => (exact ? 60 : 150), // a prompt's bound, then its exact count, plus its output
      tighten: () => !exact && (exact = true),
    });
  const call = await begin('r1');
  assert.ok(exact, 'tightened after the window refused 150 of 100 tokens');
  assert.deepEqual(call.hold.reserved, { keyId: capped.keyId, tokens: 60, uc: 0 });
  await assert.rejects(begin('r2'), (err: unknown) => err instanceof ApiError && err.code === 'rate_limit_exceeded' && /has 40 left today/.test(err.message));
  assert.equal((await walletOf(f.store, wallet)).held_uc, 100, "the refused call's hold was not taken");
  await call.settle({ route: null, promptTokens: 20, completionTokens: 5, costMicrocents: 50, status: 'ok' });
  await billing.flush();
  assert.equal((await walletOf(f.store, wallet)).held_uc, 0);
  assert.equal((await billing.admit(capped))?.['x-ratelimit-used-tpd'], '25', 'what it used, the rest of its reservation given back');
});
