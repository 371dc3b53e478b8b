// The Meter on the real billing service and model catalog (embedded store): a refused request
// holds nothing; a call settles or releases exactly once; released work is free.
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
  return { f, meter, who: principal(id), wallet };
}

test('a request its capability refuses holds nothing; a held call settles once, later settles and releases are no-ops', async (t) => {
  const { f, meter, who, wallet } = await setup();
  t.after(() => f.close());
  await assert.rejects(
    meter.begin(who, { model: 'm-1', type: 'intent', requestId: 'r0', check: () => { throw new ApiError('context_length_exceeded', 'too long'); }, estimate: () => 500 }),
    (err: unknown) => err instanceof ApiError && err.code === 'context_length_exceeded',
  );
  assert.equal((await walletOf(f.store, wallet)).held_uc, 0, 'nothing held for a refused request');
  await assert.rejects(meter.begin(who, { model: 'm-1', type: 'llm', requestId: 'r0', estimate: () => 1 }), (err: unknown) => err instanceof ApiError && err.code === 'model_not_found');

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
