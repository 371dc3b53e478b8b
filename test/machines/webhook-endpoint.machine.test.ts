// The webhook endpoint machine three ways: pure transitions, as an actor in the runtime with a fake
// delivery effect, and persisted mid-delivery then restored (the batch is re-run).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fromPromise, initialTransition, transition, type AnyMachineSnapshot } from 'xstate';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import {
  FAILURE_LIMIT,
  foldOutcomes,
  version,
  webhookEndpointMachine,
  type DeliverBatchInput,
  type DeliverBatchOutput,
  type WebhookEndpointContext,
} from '../../machines/webhook-endpoint.machine.ts';
import { openTestStore, silent, tempDir, waitFor } from '../actors/helpers.ts';

const done = (output: DeliverBatchOutput) => ({ type: 'xstate.done.actor.deliverBatch', output }) as never;
const batch = (outcomes: boolean[], more = false): DeliverBatchOutput => ({ outcomes, at: 1_000, more, gone: false });
const ctx = (s: AnyMachineSnapshot) => s.context as WebhookEndpointContext;

test('foldOutcomes: a 2xx resets, a failure adds one, the limit stops the count', () => {
  assert.equal(foldOutcomes(0, [false, false, true, false]), 1);
  assert.equal(foldOutcomes(8, [false, false, false]), FAILURE_LIMIT);
  assert.equal(foldOutcomes(9, [true]), 0);
});

test('pure: counts failures, a 2xx resets, the 10th consecutive failure disables once, enable restarts the counter', () => {
  let [s] = initialTransition(webhookEndpointMachine, { webhookId: 7, batchSize: 4 });
  assert.deepEqual(s.value, { enabled: 'idle' });
  assert.ok(s.hasTag('idle'));

  [s] = transition(webhookEndpointMachine, s, { type: 'outbox.ready' });
  assert.deepEqual(s.value, { enabled: 'draining' });
  assert.equal(s.hasTag('idle'), false, 'custodial while a batch is in flight');
  assert.equal(ctx(s).attempt, 1);

  // An event arriving meanwhile makes it drain again after the batch.
  [s] = transition(webhookEndpointMachine, s, { type: 'outbox.ready' });
  assert.equal(ctx(s).pending, true);
  [s] = transition(webhookEndpointMachine, s, done(batch([false, false, false, false])));
  assert.deepEqual(s.value, { enabled: 'draining' });
  assert.equal(ctx(s).consecutiveFailures, 4);
  assert.equal(ctx(s).attempt, 2);
  [s] = transition(webhookEndpointMachine, s, done(batch([false, true, false])));
  assert.deepEqual(s.value, { enabled: 'idle' });
  assert.equal(ctx(s).consecutiveFailures, 1);
  assert.equal(ctx(s).lastDeliveryAt, 1_000);

  // 9 failures: the next batch may carry only one event, so nothing is sent past the 10th failure.
  [s] = transition(webhookEndpointMachine, s, { type: 'outbox.ready' });
  [s] = transition(webhookEndpointMachine, s, done(batch([false, false, false, false], true)));
  [s] = transition(webhookEndpointMachine, s, done(batch([false, false, false, false], true)));
  assert.equal(ctx(s).consecutiveFailures, 9);
  const [disabled, disabledActions] = transition(webhookEndpointMachine, s, done(batch([false], true)));
  assert.deepEqual(disabled.value, { disabled: 'discarding' });
  assert.equal(ctx(disabled).consecutiveFailures, FAILURE_LIMIT);
  assert.equal(ctx(disabled).disabledAt, 1_000);
  assert.equal(ctx(disabled).disabledCount, 1);
  assert.equal(disabledActions.filter((a) => a.type === 'disabled').length, 1, 'told once');

  let [d] = transition(webhookEndpointMachine, disabled, { type: 'xstate.done.actor.discardQueue', output: 3 } as never);
  assert.deepEqual(d.value, { disabled: 'idle' });
  assert.ok(d.hasTag('idle'));
  // Events for a disabled endpoint are discarded, never delivered.
  [d] = transition(webhookEndpointMachine, d, { type: 'outbox.ready' });
  assert.deepEqual(d.value, { disabled: 'discarding' });
  [d] = transition(webhookEndpointMachine, d, { type: 'xstate.done.actor.discardQueue', output: 0 } as never);

  const [enabled] = transition(webhookEndpointMachine, d, { type: 'enable' });
  assert.deepEqual(enabled.value, { enabled: 'idle' });
  assert.deepEqual([ctx(enabled).consecutiveFailures, ctx(enabled).disabledAt, ctx(enabled).disabledCount], [0, null, 1]);

  const [removed] = transition(webhookEndpointMachine, enabled, { type: 'remove' });
  assert.equal(removed.status, 'done');
});

test('as an actor: batches never exceed the failures left before the limit; disabled after exactly 10 attempts', async (t) => {
  const { dir, remove } = tempDir();
  const store = await openTestStore(dir);
  const rt = new ActorRuntime({ store, logger: silent, instanceId: 'n1' });
  const maxes: number[] = [];
  let queued = 25;
  let told = 0;
  rt.register({
    kind: 'webhook',
    machine: webhookEndpointMachine,
    version,
    provide: () => ({
      actors: {
        deliverBatch: fromPromise<DeliverBatchOutput, DeliverBatchInput>(async ({ input }) => {
          maxes.push(input.max);
          const n = Math.min(input.max, queued);
          queued -= n;
          return { outcomes: Array.from({ length: n }, () => false), at: Date.now(), more: n === input.max && queued > 0, gone: false };
        }),
        discardQueue: fromPromise<number, { webhookId: number }>(async () => {
          const n = queued;
          queued = 0;
          return n;
        }),
      },
      actions: { disabled: () => void told++ },
    }),
  });
  await rt.start();
  t.after(async () => {
    await rt.stop();
    await store.close();
    remove();
  });
  await rt.spawn('webhook', '1', { webhookId: 1, batchSize: 4 });
  await rt.send('webhook', '1', { type: 'outbox.ready' });
  const view = await waitFor('disabled idle', async () => {
    const v = await rt.get('webhook', '1');
    return JSON.stringify(v.value) === JSON.stringify({ disabled: 'idle' }) && v;
  });
  assert.deepEqual(maxes, [4, 4, 2]);
  assert.equal(
    maxes.reduce((a, b) => a + b, 0),
    FAILURE_LIMIT,
  );
  assert.equal(queued, 0, 'the rest was discarded');
  assert.equal(told, 1);
  assert.equal((view.context as WebhookEndpointContext).consecutiveFailures, 10);
  // Idle: at most the short grace lease after its last write (5 s), which no heartbeat renews.
  assert.ok(view.lease_until === null || view.lease_until.getTime() <= Date.now() + 5_000, 'a disabled endpoint holds no lease beyond the grace');
});

test('persisted mid-delivery and restored: the batch is re-run and its outcome counted once', async (t) => {
  const { dir, remove } = tempDir();
  let store = await openTestStore(dir);
  t.after(async () => {
    await store.close();
    remove();
  });
  const calls: DeliverBatchInput[] = [];
  const kind = (deliver: (input: DeliverBatchInput) => Promise<DeliverBatchOutput>) => ({
    kind: 'webhook',
    machine: webhookEndpointMachine,
    version,
    provide: () => ({
      actors: {
        deliverBatch: fromPromise<DeliverBatchOutput, DeliverBatchInput>(({ input }) => {
          calls.push(input);
          return deliver(input);
        }),
        discardQueue: fromPromise<number, { webhookId: number }>(async () => 0),
      },
    }),
  });
  const first = new ActorRuntime({ store, logger: silent, instanceId: 'n1', leaseMs: 600 });
  first.register(kind(() => new Promise<DeliverBatchOutput>(() => {})));
  await first.start();
  await first.spawn('webhook', '5', { webhookId: 5, batchSize: 10 });
  const inflight = await first.send('webhook', '5', { type: 'outbox.ready' });
  assert.deepEqual(inflight.value, { enabled: 'draining' });
  first.abandon(); // a crash: the lease stays until it expires
  await store.close();

  store = await openTestStore(dir);
  const second = new ActorRuntime({ store, logger: silent, instanceId: 'n2', leaseMs: 600 });
  second.register(kind(async () => ({ outcomes: [false, false], at: Date.now(), more: false, gone: false })));
  await second.start();
  t.after(() => second.stop());
  const view = await waitFor(
    'resumed and finished',
    async () => {
      const v = await second.get('webhook', '5');
      return JSON.stringify(v.value) === JSON.stringify({ enabled: 'idle' }) && v;
    },
    5000,
  );
  assert.equal((view.context as WebhookEndpointContext).consecutiveFailures, 2);
  assert.deepEqual(
    calls.map((c) => c.attempt),
    [1, 1],
    'the same batch (same attempt) re-run after the restore',
  );
});
