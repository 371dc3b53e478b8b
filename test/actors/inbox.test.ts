// The inbox: an event for an actor held by another instance is applied by its owner, once, in
// order; `ask` gets the transition's reply; messages pending when the owner dies are applied by
// the instance that takes the actor over; without wake-ups the poll delivers them.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ActorBusyError } from '../../src/actors/errors.ts';
import type { ActorDoc, InboxDoc } from '../../src/actors/record.ts';
import { LocalWakeups } from '../../src/actors/wakeups.ts';
import { waitFor } from './helpers.ts';
import { streamFixture } from './stream-helpers.ts';
import type { StreamContext, StreamReply } from './stream.machine.ts';

const ctx = (view: { context: unknown }) => view.context as StreamContext;

test('two instances: 3 × 40 events from two senders reach the owner once each, each sender in order; ask gets the reply', async (t) => {
  const f = await streamFixture(t);
  const wakeups = new LocalWakeups();
  const a = await f.runtime({ instanceId: 'A', wakeups });
  const b = await f.runtime({ instanceId: 'B', wakeups });
  const c = await f.runtime({ instanceId: 'C', wakeups });
  await a.spawn('stream', 'x', { id: 'x', account: 1, open: true }); // custodial: A holds it
  assert.equal((await b.get('stream', 'x')).owner, 'A');

  const fromB = Array.from({ length: 40 }, (_, i) => b.send('stream', 'x', { type: 'mark', seq: 1000 + i }));
  const fromC = Array.from({ length: 40 }, (_, i) => c.send('stream', 'x', { type: 'mark', seq: 2000 + i }));
  const fromA = Array.from({ length: 40 }, (_, i) => a.send('stream', 'x', { type: 'mark', seq: 3000 + i }));
  await Promise.all([...fromB, ...fromC, ...fromA]);

  const { reply, view } = await b.ask<StreamReply>('stream', 'x', { type: 'whoami' });
  assert.equal(reply.type, 'reply');
  assert.equal(reply.seen.length, 120, 'every event applied exactly once');
  assert.equal(new Set(reply.seen).size, 120);
  for (const base of [1000, 2000, 3000]) {
    const mine = reply.seen.filter((s) => s >= base && s < base + 1000);
    assert.deepEqual(
      mine,
      Array.from({ length: 40 }, (_, i) => base + i),
      `the events of sender ${base} in their order`,
    );
  }
  assert.equal(view.owner, 'A', 'applied by the owner, which kept the actor');
  const doc = await f.store.collection<ActorDoc>('actors').findOne({ _id: 'stream:x' });
  assert.equal(doc?.inbox_applied, doc?.inbox_next, 'the last applied message is stored with the snapshot');
  assert.equal(await f.store.collection<InboxDoc>('actor_inbox').countDocuments({}), 0, 'applied messages are cleaned up');
});

test('messages accepted while the owner is alive and applied after it dies: the restarted instance applies them once, in order', async (t) => {
  const f = await streamFixture(t);
  // The owner hears of nothing (no wake-ups, a poll it never reaches): its messages stay pending.
  const a = await f.runtime({ instanceId: 'A', leaseMs: 600, inboxPollMs: 3_600_000 });
  const b = await f.runtime({ instanceId: 'B', leaseMs: 600, inboxPollMs: 3_600_000 });
  await a.spawn('stream', 'y', { id: 'y', account: 1, open: true });
  for (let seq = 0; seq < 5; seq++) {
    const view = await b.send('stream', 'y', { type: 'mark', seq }, { wait: 'accepted' });
    assert.equal(view.owner, 'A');
  }
  assert.equal(await f.store.collection<InboxDoc>('actor_inbox').countDocuments({ status: 'pending' }), 5);
  a.abandon(); // A dies before it applied them

  const restarted = await f.runtime({ instanceId: 'A', leaseMs: 600, inboxPollMs: 3_600_000 });
  const view = await restarted.get('stream', 'y');
  assert.deepEqual(ctx(view).seen, [0, 1, 2, 3, 4], 'applied at takeover, in order');
  assert.equal(ctx(view).resumedAs, 'resume');
  const again = await restarted.send('stream', 'y', { type: 'mark', seq: 5 });
  assert.deepEqual(ctx(again).seen, [0, 1, 2, 3, 4, 5], 'and never again');
});

test('without wake-ups the poll delivers; an owner that never answers makes the sender fail with actor_busy, and the event is withdrawn', async (t) => {
  const f = await streamFixture(t);
  const a = await f.runtime({ instanceId: 'A', inboxPollMs: 30 });
  const b = await f.runtime({ instanceId: 'B', inboxPollMs: 30 });
  await a.spawn('stream', 'z', { id: 'z', account: 1, open: true });
  const { reply } = await b.ask<StreamReply>('stream', 'z', { type: 'whoami' });
  assert.deepEqual(reply.seen, []);
  await b.send('stream', 'z', { type: 'mark', seq: 1 });
  assert.deepEqual(ctx(await a.get('stream', 'z')).seen, [1]);

  // A stops polling and hearing (it stays alive, holding the lease): B gives up after its timeout.
  const deaf = await f.runtime({ instanceId: 'D', inboxPollMs: 3_600_000 });
  await deaf.spawn('stream', 'w', { id: 'w', account: 1, open: true });
  const started = performance.now();
  await assert.rejects(b.send('stream', 'w', { type: 'mark', seq: 9 }, { timeoutMs: 200 }), ActorBusyError);
  assert.ok(performance.now() - started >= 190);
  const withdrawn = await f.store.collection<InboxDoc>('actor_inbox').findOne({ key: 'stream:w' });
  assert.equal(withdrawn?.status, 'withdrawn', 'a refused event never applies later');
  await deaf.send('stream', 'w', { type: 'mark', seq: 10 });
  await deaf.stop();
  const next = await f.runtime({ instanceId: 'E' }); // takes the actor over and drains its inbox
  const view = await waitFor('E holds the actor', async () => {
    const v = await next.get('stream', 'w');
    return v.owner === 'E' && v;
  });
  assert.deepEqual(ctx(view).seen, [10], 'the withdrawn event was skipped, not applied');
  assert.equal(await f.store.collection<InboxDoc>('actor_inbox').countDocuments({ key: 'stream:w' }), 0);
});
