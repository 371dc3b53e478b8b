// Persistence by policy, in-memory resources, finalize versus resume, projections, the size limit
// and claiming with capacity: the runtime features the speech actors rely on.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { SnapshotTooLargeError } from '../../src/actors/errors.ts';
import type { ActorDoc } from '../../src/actors/record.ts';
import { captureLogs, waitFor } from './helpers.ts';
import { streamFixture, streamKind } from './stream-helpers.ts';
import type { StreamContext } from './stream.machine.ts';

const ctx = (view: { context: unknown }) => view.context as StreamContext;

async function stored(store: { collection: (n: string) => unknown }, id: string): Promise<ActorDoc> {
  const doc = await (store.collection('actors') as { findOne(f: object): Promise<ActorDoc | null> }).findOne({ _id: `stream:${id}` });
  assert.ok(doc, `stream:${id} is stored`);
  return doc;
}

test('checkpoint: 400 durable sends queued together are applied in order and written once (every-event: runtime.test.ts)', async (t) => {
  const f = await streamFixture(t);
  const checkpointed = await f.runtime({}, streamKind({ persistence: { mode: 'checkpoint', intervalMs: 60_000 } }));
  await checkpointed.spawn('stream', 'c', { id: 'c', account: 1 });
  const before = (await stored(f.store, 'c')).rev;
  const views = await Promise.all(Array.from({ length: 400 }, (_, seq) => checkpointed.send('stream', 'c', { type: 'mark', seq }, { wait: 'durable' })));
  assert.deepEqual(
    ctx(views[399]!).seen,
    Array.from({ length: 400 }, (_, i) => i),
  );
  const after = await stored(f.store, 'c');
  assert.equal(after.rev - before, 1, '400 durable sends queued together cost one write');
  assert.equal((JSON.parse(after.snapshot!) as { context: StreamContext }).context.seen.length, 400);
});

test('checkpoint: context-only events wait for the interval; a state change or a durable-marked event is written at once', async (t) => {
  const f = await streamFixture(t);
  const rt = await f.runtime({}, streamKind({ persistence: { mode: 'checkpoint', intervalMs: 300, durableEvents: ['mark'] } }));
  await rt.spawn('stream', 's', { id: 's', account: 1 });
  const rev0 = (await stored(f.store, 's')).rev;

  const applied = await rt.send('stream', 's', { type: 'tick' }, { wait: 'applied' });
  assert.equal(ctx(applied).ticks, 1, 'the transition is applied when send resolves');
  await sleep(50);
  assert.equal((await stored(f.store, 's')).rev, rev0, 'a context-only change is not written before the interval');
  await waitFor('the checkpoint write', async () => (await stored(f.store, 's')).rev === rev0 + 1, 2_000);
  assert.equal((JSON.parse((await stored(f.store, 's')).snapshot!) as { context: StreamContext }).context.ticks, 1);

  await rt.send('stream', 's', { type: 'mark', seq: 7 }, { wait: 'applied' });
  await waitFor('the durable-marked event written', async () => (await stored(f.store, 's')).rev === rev0 + 2, 200);

  await rt.send('stream', 's', { type: 'open' }, { wait: 'applied' });
  await waitFor(
    'the state change written',
    async () => {
      const doc = await stored(f.store, 's');
      return doc.rev === rev0 + 3 && doc.value === 'open' && doc.custodial;
    },
    200,
  );

  const durable = await rt.send('stream', 's', { type: 'tick' }, { wait: 'durable' });
  assert.equal(ctx(durable).ticks, 2);
  assert.equal((JSON.parse((await stored(f.store, 's')).snapshot!) as { context: StreamContext }).context.ticks, 2, "wait 'durable' resolves after the write");
});

test('an idle actor keeps its lease for the grace: back-to-back events cost one write each, not two', async (t) => {
  const f = await streamFixture(t);
  const rt = await f.runtime({ idleLeaseGraceMs: 5_000 });
  await rt.spawn('stream', 'g', { id: 'g', account: 1 });
  const rev0 = (await stored(f.store, 'g')).rev;
  for (let i = 0; i < 10; i++) await rt.send('stream', 'g', { type: 'tick' });
  const doc = await stored(f.store, 'g');
  assert.equal(doc.rev - rev0, 10, 'one write per event');
  assert.equal(doc.epoch, 1, 'no lease grab between them');
  assert.equal(doc.custodial, false);

  const noGrace = await f.runtime({ instanceId: 'node-2', idleLeaseGraceMs: 0 }, streamKind());
  await noGrace.spawn('stream', 'h', { id: 'h', account: 1 });
  for (let i = 0; i < 3; i++) await noGrace.send('stream', 'h', { type: 'tick' });
  assert.equal((await stored(f.store, 'h')).epoch, 4, 'without the grace every event grabs the lease again');
});

test('resources are handed to effects, never persisted, and disposed when the actor leaves memory', async (t) => {
  const f = await streamFixture(t);
  let seen: unknown = null;
  const kind = streamKind({}, async (_input, ctx) => {
    seen = ctx.resources();
    return 'ok';
  });
  const rt = await f.runtime({}, kind);
  let disposed = 0;
  const socket = { label: 'socket-1', dispose: () => void disposed++ };
  await rt.spawn('stream', 'r', { id: 'r', account: 1 }, { resources: socket });
  await rt.send('stream', 'r', { type: 'charge' });
  await waitFor('the charge', async () => ctx(await rt.get('stream', 'r')).charged === 'ok');
  assert.equal(seen, socket, 'the effect got the live resources object');
  assert.doesNotMatch(JSON.stringify(await stored(f.store, 'r')), /socket-1/, 'never in the stored document');
  await rt.send('stream', 'r', { type: 'open' });
  await rt.send('stream', 'r', { type: 'close' });
  assert.equal(disposed, 1, 'disposed once the actor finished and left memory');
  assert.equal(rt.isLoaded('stream', 'r'), false);
});

test('an orphaned socket-bound actor is finalized; an orphaned job is resumed', async (t) => {
  const f = await streamFixture(t);
  const leaseMs = 300;
  const a = await f.runtime({ instanceId: 'A', leaseMs }, streamKind({ onOrphan: 'finalize' }));
  await a.spawn('stream', 'sock', { id: 'sock', account: 1 }, { resources: { dispose() {} } });
  await a.send('stream', 'sock', { type: 'open' });
  a.abandon(); // A dies with the socket

  const b = await f.runtime({ instanceId: 'B', leaseMs }, streamKind({ onOrphan: 'finalize' }));
  const done = await waitFor('the socket actor finalized by B', async () => {
    const view = await b.get('stream', 'sock');
    return view.status === 'done' && view;
  });
  assert.equal(ctx(done).resumedAs, 'finalize');
  assert.equal(done.value, 'closed');

  const c = await f.runtime({ instanceId: 'C', leaseMs }, { ...streamKind(), kind: 'job' } as never);
  await c.spawn('job', 'j', { id: 'j', account: 1 });
  await c.send('job', 'j', { type: 'open' });
  c.abandon();
  const d = await f.runtime({ instanceId: 'D', leaseMs }, { ...streamKind(), kind: 'job' } as never);
  const resumed = await waitFor('the job resumed by D', async () => {
    const view = await d.get('job', 'j');
    return view.owner === 'D' && ctx(view).resumedAs !== null && view;
  });
  assert.equal(resumed.value, 'open');
  assert.equal(ctx(resumed).resumedAs, 'resume');
});

test('projections: listed per account and status by an indexed query, without opening snapshots', async (t) => {
  const f = await streamFixture(t);
  const kind = streamKind({
    project: ({ value, context }) => ({ account: (context as StreamContext).account, phase: String(value) }),
    indexes: [{ account: 1, phase: 1, created_at: -1 }],
  });
  const rt = await f.runtime({}, kind);
  for (const [id, account] of [
    ['a1', 1],
    ['a2', 1],
    ['b1', 2],
  ] as const)
    await rt.spawn('stream', id, { id, account });
  await rt.send('stream', 'a2', { type: 'open' });
  const open = await rt.list('stream', { account: 1, phase: 'open' });
  assert.deepEqual(
    open.map((s) => s.id),
    ['a2'],
  );
  assert.deepEqual(open[0]!.projection, { account: 1, phase: 'open' });
  const all1 = await rt.list('stream', { account: 1 });
  assert.deepEqual(all1.map((s) => s.id).sort(), ['a1', 'a2']);
  assert.deepEqual((await rt.list('stream', { account: 3 })).length, 0);
});

test('a snapshot over the size limit is refused with a clear error; the stored and in-memory state stay as before', async (t) => {
  const f = await streamFixture(t);
  const rt = await f.runtime({ maxSnapshotBytes: 4_096 });
  await rt.spawn('stream', 'big', { id: 'big', account: 1 });
  await rt.send('stream', 'big', { type: 'tick' });
  const before = await stored(f.store, 'big');
  await assert.rejects(
    rt.send('stream', 'big', { type: 'grow', bytes: 10_000 }),
    (err: unknown) => err instanceof SnapshotTooLargeError && /over the 4096-byte limit/.test(err.message),
  );
  const after = await stored(f.store, 'big');
  assert.equal(after.rev, before.rev, 'nothing written');
  const next = await rt.send('stream', 'big', { type: 'tick' });
  assert.equal(ctx(next).ticks, 2, 'the actor goes on from its stored state');
  assert.equal(ctx(next).blob, '');
  // A spawn whose input is past the limit: refused before anything is stored or runs.
  await assert.rejects(rt.spawn('stream', 'huge', { id: 'huge', account: 1, pad: 'x'.repeat(5_000) }), SnapshotTooLargeError);
  assert.equal(await (f.store.collection('actors') as { findOne(q: object): Promise<unknown> }).findOne({ _id: 'stream:huge' }), null);
});

test('a snapshot past the limit that cannot be refused (a custodial actor, a checkpoint) is written all the same, logged at error, never dropped', async (t) => {
  const f = await streamFixture(t);
  const logs = captureLogs();
  const kind = streamKind({ persistence: { mode: 'checkpoint', intervalMs: 60_000, durableEvents: ['grow'] } });
  const rt = await f.runtime({ maxSnapshotBytes: 4_096, logger: logs.logger }, kind);
  await rt.spawn('stream', 'live', { id: 'live', account: 1, open: true });
  await rt.send('stream', 'live', { type: 'tick' }, { wait: 'applied' }); // unsaved, then written with the growth
  const grown = await rt.send('stream', 'live', { type: 'grow', bytes: 10_000 }, { wait: 'durable' });
  assert.equal(ctx(grown).blob.length, 10_000);
  const doc = await stored(f.store, 'live');
  const persisted = JSON.parse(doc.snapshot!) as { context: StreamContext };
  assert.deepEqual([persisted.context.blob.length, persisted.context.ticks, doc.value], [10_000, 1, 'open'], 'stored with the tick before it');
  assert.ok(rt.isLoaded('stream', 'live'), 'still in memory, its lease held');
  const oversized = logs.lines.filter((l) => l.level === 50 && /over its size limit/.test(String(l.msg)));
  assert.equal(oversized.length, 1, JSON.stringify(logs.lines));
  assert.ok((oversized[0]!.bytes as number) > 10_000);
  await rt.send('stream', 'live', { type: 'tick' }, { wait: 'durable' });
  assert.equal(logs.lines.filter((l) => /over its size limit/.test(String(l.msg))).length, 1, 'logged once per crossing');
  const closed = await rt.send('stream', 'live', { type: 'close' });
  assert.equal(closed.status, 'done', 'it reaches its end as any other');
});

test('claiming with capacity: an instance holds at most its share; the rest waits, unowned, and is claimed as room frees', async (t) => {
  const f = await streamFixture(t);
  const project = ({ value, context }: { value: unknown; context: unknown }) => ({ account: (context as StreamContext).account, phase: String(value) });
  const kind = streamKind({ capacity: 2, project });
  const a = await f.runtime({ instanceId: 'A', leaseMs: 400 }, kind);
  for (const id of ['q1', 'q2', 'q3', 'q4']) await a.spawn('stream', id, { id, account: 1, open: true });
  const owners = async () => Promise.all(['q1', 'q2', 'q3', 'q4'].map(async (id) => (await a.get('stream', id)).owner));
  assert.deepEqual(await owners(), ['A', 'A', null, null], 'two held, two queued');
  // Queued actors have not run, yet lists by projected fields see them (their initial state).
  assert.deepEqual((await a.list('stream', { account: 1 })).map((v) => v.id).sort(), ['q1', 'q2', 'q3', 'q4']);
  a.abandon();

  const b = await f.runtime({ instanceId: 'B', leaseMs: 400 }, streamKind({ capacity: 3 }));
  await waitFor('B claims its share', async () => (await owners()).filter((o) => o === 'B').length === 3);
  await sleep(500);
  assert.equal((await owners()).filter((o) => o === 'B').length, 3, 'never more than its capacity');
  await b.send('stream', 'q1', { type: 'close' }).catch(() => undefined);
  await b.send('stream', 'q2', { type: 'close' }).catch(() => undefined);
  await b.send('stream', 'q3', { type: 'close' }).catch(() => undefined);
  await waitFor(
    'the last one claimed once room frees',
    async () => (await a.get('stream', 'q4')).owner === 'B' || (await a.get('stream', 'q4')).status === 'done',
  );
});
