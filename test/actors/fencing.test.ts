// Fenced work: an owner cut off from the store loses its lease before anyone else can take the
// actor; its in-flight step is aborted by the lease's signal and its result would be refused; the
// new owner performs the step once; a later replay finds it done.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { LeaseScope } from '../../src/actors/kinds.ts';
import type { Collection, Store } from '../../src/store/port.ts';
import { waitFor } from './helpers.ts';
import { streamFixture, streamKind } from './stream-helpers.ts';
import type { StreamContext } from './stream.machine.ts';

/** The store as one instance sees it; `cut()` makes every call fail, as a network partition does. */
function partitionable(store: Store): { store: Store; cut: () => void } {
  let cut = false;
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(obj, prop, receiver) {
        const value = Reflect.get(obj, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (cut) return Promise.reject(new Error('partitioned from the store'));
          return (value as (...a: unknown[]) => unknown).apply(obj, args);
        };
      },
    });
  const view: Store = {
    kind: store.kind,
    collection: (name) => wrap(store.collection(name) as Collection) as never,
    ping: () => store.ping(),
    close: async () => {},
  };
  return { store: view, cut: () => void (cut = true) };
}

test('a stalled owner’s step is aborted and not repeated: the new owner performs it once; a replay finds it done', async (t) => {
  const f = await streamFixture(t);
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  const started: Array<{ by: string; epoch: number; at: number }> = [];
  const aborted: Array<{ epoch: number; at: number }> = [];
  const effects: number[] = [];
  const kindFor = (by: string) =>
    streamKind({}, (_input, ctx) =>
      ctx.steps.once('charge', async (scope: LeaseScope) => {
        started.push({ by, epoch: scope.epoch, at: performance.now() });
        scope.signal.addEventListener('abort', () => aborted.push({ epoch: scope.epoch, at: performance.now() }));
        await gate;
        if (scope.signal.aborted) throw new Error('lease lost: not charging');
        effects.push(scope.epoch); // the paid call
        return `paid-${scope.epoch}`;
      }),
    );
  const leaseMs = 300;
  const partition = partitionable(f.store);
  const a = await f.runtime({ instanceId: 'A', leaseMs }, kindFor('A'), partition.store);
  await a.spawn('stream', 'p', { id: 'p', account: 1 });
  await a.send('stream', 'p', { type: 'charge' });
  await waitFor('A started the step', () => started.length === 1);
  partition.cut(); // A can no longer renew its lease

  const b = await f.runtime({ instanceId: 'B', leaseMs }, kindFor('B'));
  await waitFor('B took over and started the step', () => started.length === 2, 3_000);
  assert.equal(started[1]!.by, 'B');
  assert.ok(started[1]!.epoch > started[0]!.epoch, 'under a newer epoch');
  assert.equal(aborted.length >= 1 && aborted[0]!.epoch, started[0]!.epoch, "A's step was aborted");
  assert.ok(aborted[0]!.at < started[1]!.at, 'before B could start it');

  openGate();
  const view = await waitFor('B finished the charge', async () => {
    const v = await b.get('stream', 'p');
    return (v.context as StreamContext).charged !== null && v;
  });
  assert.deepEqual(effects, [started[1]!.epoch], 'the paid call happened once, by the new owner');
  assert.equal((view.context as StreamContext).charged, `paid-${started[1]!.epoch}`);

  // A replay of the same step (after a crash, say) finds it done: no second call.
  await b.send('stream', 'p', { type: 'charge' });
  await waitFor('the replayed charge', async () => (await b.get('stream', 'p')).value === 'idle');
  assert.equal(effects.length, 1);
  assert.equal(started.length, 2, 'the recorded result was returned without running the work');
});
