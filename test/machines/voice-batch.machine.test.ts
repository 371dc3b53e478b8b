// The voice batch machine as an actor with injected fake effects: controls answered as the status
// allows, a pause said once, and a persistence round trip mid-tick (persisted → JSON → restored: the
// tick is re-run, as the runtime's restore does) that finishes with batch.completed once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createActor, fromPromise } from 'xstate';
import { voiceBatchMachineOf, type NoticeInput, type RowCounts, type TickInput, type TickOutput } from '../../machines/voice-batch.machine.ts';

const counts = (queued: number, in_progress = 0): RowCounts => ({
  ...{ total: 2, queued, in_progress, completed: 2 - queued - in_progress },
  ...{ busy: 0, no_answer: 0, failed: 0, voicemail: 0, canceled: 0, invalid: 0 },
});
const input = {
  batchId: 'batch_1',
  account: 'user:1',
  createdAt: 1000,
  startAt: 1000,
  counts: counts(2),
  timing: { pollMs: 10, creditRecheckMs: 10, maxSleepMs: 1000 },
  spec: {},
};

/** The machine with a tick answering from `plan` (a promise that never settles: a tick in flight) and notices recorded. */
function machine(plan: (i: TickInput) => Promise<TickOutput>, notices: string[]) {
  return voiceBatchMachineOf().provide({
    actors: {
      tick: fromPromise(async ({ input }: { input: TickInput }) => plan(input)),
      notify: fromPromise(async ({ input }: { input: NoticeInput }): Promise<void> => {
        notices.push(`${input.step} ${input.event}`);
      }),
    },
  });
}
const out = (at: number, c: RowCounts): TickOutput => ({ at, counts: c, costMicrocents: 0, inWindow: true, nextWindowAt: at, nextDueAt: null, refused: null });
const settle = () => new Promise((r) => setTimeout(r, 30));

test('controls: pause (said once), a second pause refused, resume, cancel; an ended batch refuses them all', async () => {
  const notices: string[] = [];
  const modes: string[] = [];
  const actor = createActor(
    machine(async (i) => (modes.push(i.mode), out(2000, counts(1, 1))), notices),
    { input },
  ).start();
  const replies: unknown[] = [];
  actor.on('control', (e) => replies.push([e.ok, e.status]));
  await settle();
  actor.send({ type: 'api.pause', now: 2000 });
  actor.send({ type: 'api.pause', now: 2001 });
  await settle();
  assert.equal(actor.getSnapshot().context.status, 'paused');
  actor.send({ type: 'api.resume', now: 2002 });
  await settle();
  actor.send({ type: 'api.cancel', now: 2003 });
  await settle();
  assert.deepEqual(replies, [
    [true, 'paused'],
    [false, 'paused'],
    [true, 'running'],
    [true, 'cancelling'],
  ]);
  assert.ok(modes.includes('drain') && modes.includes('cancel') && modes[0] === 'drain', modes.join());
  assert.deepEqual(notices.slice(0, 3), ['notify:0 batch.started', 'notify:1 batch.paused', 'notify:2 batch.resumed']);
  actor.stop();
});

test('persisted mid-tick, restored from JSON: the tick runs again and the batch completes, batch.completed once', async () => {
  const notices: string[] = [];
  // The first tick (before the start: a drain, reading the clock) answers; the next, placing calls, is in flight.
  const first = createActor(
    machine((i) => (i.mode === 'drain' ? Promise.resolve(out(1000, counts(2))) : new Promise<TickOutput>(() => undefined)), notices),
    { input },
  ).start();
  await settle();
  assert.deepEqual(first.getSnapshot().value, { live: 'ticking' });
  const stored = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
  first.stop();
  let ticks = 0;
  const restored = createActor(
    machine(async () => (ticks++, out(5000, counts(0))), notices),
    { input, snapshot: stored },
  ).start();
  await settle();
  assert.equal(restored.getSnapshot().status, 'done');
  assert.deepEqual([restored.getSnapshot().context.status, restored.getSnapshot().context.endedAt, ticks], ['completed', 5000, 1]);
  assert.deepEqual(
    notices.filter((n) => n.includes('completed')),
    ['notify:completed batch.completed'],
  );
});
