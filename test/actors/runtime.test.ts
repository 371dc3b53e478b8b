import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { test, type TestContext } from 'node:test';
import { initialTransition, transition } from 'xstate';
import { ActorBusyError, ActorNotFoundError, InvalidActorIdError, RevisionConflictError } from '../../src/actors/errors.ts';
import type { ActorDoc, ActorView } from '../../src/actors/record.ts';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import type { Store } from '../../src/store/port.ts';
import { nodeArgsFor } from '../build.ts';
import { captureLogs, hang, openTestStore, probeKind, silent, tempDir, waitFor, type Work } from './helpers.ts';
import { probeMachine, type ProbeContext } from './probe.machine.ts';

const ctx = (view: ActorView) => view.context as ProbeContext;

type RuntimeOptions = Partial<ConstructorParameters<typeof ActorRuntime>[0]>;

type KindOptions = Parameters<typeof probeKind>[1];

function runtime(store: Store, work: Work, opts: RuntimeOptions = {}, kind: KindOptions = {}): ActorRuntime {
  const rt = new ActorRuntime({ store, logger: silent, instanceId: 'node-1', ...opts });
  rt.register(probeKind(work, kind));
  return rt;
}

/** A store in a fresh temp dir; after the test: stop the runtimes started with it, close, delete. */
async function fixture(t: TestContext) {
  const { dir, remove } = tempDir();
  const runtimes: ActorRuntime[] = [];
  const state = { store: await openTestStore(dir) };
  t.after(async () => {
    for (const rt of runtimes) await rt.stop();
    await state.store.close();
    remove();
  });
  return {
    dir,
    state,
    /** A runtime on the current store, started (`beforeStart` can subscribe first); stopped after the test. */
    async started(work: Work, opts: RuntimeOptions = {}, kind: KindOptions = {}, beforeStart?: (rt: ActorRuntime) => void) {
      const rt = runtime(state.store, work, opts, kind);
      runtimes.push(rt);
      beforeStart?.(rt);
      await rt.start();
      return rt;
    },
  };
}

async function untilDone(rt: ActorRuntime, id: string): Promise<ActorView> {
  return waitFor(`${id} to finish`, async () => {
    const view = await rt.get('probe', id);
    return view.status === 'done' && view;
  });
}

test('the probe machine, pure: deadline armed from the event time, re-armed on resume, work result ends it', () => {
  const [idle] = initialTransition(probeMachine, { actorId: 'p' });
  assert.equal(idle.value, 'idle');
  assert.equal(idle.hasTag('idle'), true);

  const [working, startActions] = transition(probeMachine, idle, { type: 'start', now: 1_000, timeoutMs: 500 });
  assert.deepEqual(working.value, { working: 'waiting' });
  assert.equal(working.hasTag('idle'), false);
  assert.equal(working.context.deadline, 1_500);
  assert.equal(working.context.attempt, 1);
  assert.deepEqual(
    startActions.map((a) => [a.type, (a.params as { delay?: number } | undefined)?.delay]),
    [
      ['xstate.spawnChild', undefined],
      ['xstate.raise', 500],
    ],
  );

  // Resumed 400 ms later: the timer is re-armed for what is left, the work is not restarted.
  const [resumed, resumeActions] = transition(probeMachine, working, { type: 'runtime.resumed', now: 1_400 });
  assert.deepEqual(resumed.value, { working: 'waiting' });
  const raise = resumeActions.find((a) => a.type === 'xstate.raise');
  // biome-ignore lint/correctness/noUnsafeOptionalChaining: an absent raise fails the test either way
  assert.equal((raise?.params as { delay: number }).delay, 100);
  assert.equal(
    resumeActions.some((a) => a.type === 'xstate.spawnChild'),
    false,
  );

  const [done] = transition(probeMachine, resumed, { type: 'xstate.done.actor.work', output: 'r' } as never);
  assert.equal(done.value, 'done');
  assert.equal(done.status, 'done');
  assert.deepEqual(done.output, { result: 'r' });

  const [timedOut] = transition(probeMachine, resumed, { type: 'xstate.after.untilDeadline.probe.working.waiting' } as never);
  assert.equal(timedOut.value, 'timedOut');
  assert.equal(timedOut.status, 'done');
});

test('50 concurrent sends to one actor are processed one at a time, in order, each written before it resolves', async (t) => {
  const rt = await (await fixture(t)).started(hang);
  const spawned = await rt.spawn('probe', 's1', { actorId: 's1' });
  assert.equal(spawned.revision, 1);
  const views = await Promise.all(Array.from({ length: 50 }, (_, seq) => rt.send('probe', 's1', { type: 'note', seq })));
  views.forEach((view, seq) => {
    assert.equal(view.revision, seq + 2);
    assert.deepEqual(
      ctx(view).notes,
      Array.from({ length: seq + 1 }, (_, i) => i),
    );
  });
  const stored = await rt.get('probe', 's1');
  assert.equal(stored.revision, 51);
  assert.deepEqual(
    ctx(stored).notes,
    Array.from({ length: 50 }, (_, i) => i),
  );

  const again = await rt.spawn('probe', 's1', { actorId: 'ignored' });
  assert.equal(again.revision, 51, 'spawn of an existing actor returns it, not a new one');
  assert.equal(ctx(again).actorId, 's1');
  await assert.rejects(rt.send('probe', 'nobody', { type: 'note', seq: 0 }), ActorNotFoundError);
});

test('a graceful restart keeps state, context and revision, and resumes in-flight work', async (t) => {
  const { dir, state, started: fixtureRuntime } = await fixture(t);
  const first = runtime(state.store, hang);
  await first.start();
  await first.spawn('probe', 'quiet', { actorId: 'quiet' });
  await first.send('probe', 'quiet', { type: 'note', seq: 1 });
  await first.send('probe', 'quiet', { type: 'note', seq: 2 });
  await first.spawn('probe', 'busy', { actorId: 'busy' });
  const started = await first.send('probe', 'busy', { type: 'start', now: Date.now(), timeoutMs: 60_000 });
  assert.equal(started.owner, 'node-1');
  await first.stop();
  await state.store.close();

  state.store = await openTestStore(dir);
  const released = await state.store.collection<ActorDoc>('actors').findOne({ _id: 'probe:busy' });
  assert.equal(released?.owner, null, 'stop() releases the lease');
  assert.equal(released?.custodial, true);

  const calls: string[] = [];
  const second = await fixtureRuntime(async ({ actorId, attempt }) => {
    calls.push(`${actorId}:${attempt}`);
    return `ok:${actorId}:${attempt}`;
  });

  const quiet = await second.get('probe', 'quiet');
  assert.equal(quiet.value, 'idle');
  assert.equal(quiet.revision, 3);
  assert.deepEqual(ctx(quiet).notes, [1, 2]);
  const next = await second.send('probe', 'quiet', { type: 'note', seq: 3 });
  assert.equal(next.revision, 4);
  assert.deepEqual(ctx(next).notes, [1, 2, 3]);

  const busy = await untilDone(second, 'busy');
  assert.equal(busy.value, 'done');
  assert.deepEqual(busy.output, { result: 'ok:busy:1' });
  assert.ok(busy.revision > started.revision);
  assert.equal(busy.owner, null);
  assert.deepEqual(calls, ['busy:1']);
});

test('kill -9: start() restores the in-flight actors, the deadline fires on time, the work is re-run', async (t) => {
  const { dir, state, started } = await fixture(t);
  const child = spawn(process.execPath, [...nodeArgsFor(fileURLToPath(new URL('./fixtures/crash-child.ts', import.meta.url))), dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const [line] = (await once(createInterface({ input: child.stdout! }), 'line')) as [string];
  const { deadline } = JSON.parse(line) as { deadline: number };
  child.kill('SIGKILL');
  const [, signal] = (await exited) as [number | null, string | null];
  assert.equal(signal, 'SIGKILL');

  state.store = await openTestStore(dir);
  const inflight = await state.store.collection<ActorDoc>('actors').findOne({ _id: 'probe:late' });
  assert.equal(inflight?.owner, 'node-1', 'the killed process held the lease');

  const calls: string[] = [];
  let timedOutAt = 0;
  const rt = await started(
    async ({ actorId, attempt }) => {
      calls.push(`${actorId}:${attempt}`);
      if (actorId === 'late') return new Promise<string>(() => {});
      return `ok:${actorId}:${attempt}`;
    },
    {},
    {},
    (runtime) =>
      runtime.subscribe('probe', 'late', (view) => {
        if (view.value === 'timedOut') timedOutAt = Date.now();
      }),
  );

  assert.ok(Date.now() < deadline - 300, 'the test setup left time before the deadline');
  const late = await rt.get('probe', 'late');
  assert.deepEqual(late.value, { working: 'waiting' }, 'not timed out right away');

  const quick = await untilDone(rt, 'quick');
  assert.deepEqual(quick.output, { result: 'ok:quick:1' });

  await waitFor('the deadline', () => timedOutAt > 0, 5000);
  assert.ok(timedOutAt >= deadline - 20, `fired ${deadline - timedOutAt} ms early`);
  assert.ok(timedOutAt <= deadline + 1500, `fired ${timedOutAt - deadline} ms late`);
  const final = await rt.get('probe', 'late');
  assert.equal(final.status, 'done');
  assert.equal(final.owner, null);
  assert.deepEqual(calls.sort(), ['late:1', 'quick:1']);
});

test('a write behind the runtime’s back: the next send conflicts, nothing is overwritten, then it reloads', async (t) => {
  const { state, started } = await fixture(t);
  const rt = await started(hang);
  await rt.spawn('probe', 'c1', { actorId: 'c1' });
  await rt.send('probe', 'c1', { type: 'start', now: Date.now(), timeoutMs: 60_000 });
  const before = await rt.send('probe', 'c1', { type: 'note', seq: 1 });
  assert.equal(before.owner, 'node-1', 'custodial: the runtime holds the lease and trusts its copy');

  const actors = state.store.collection<ActorDoc>('actors');
  const doc = await actors.findOne({ _id: 'probe:c1' });
  const snapshot = JSON.parse(doc!.snapshot!) as { context: ProbeContext };
  snapshot.context.notes = [99];
  const theirs = JSON.stringify(snapshot);
  await actors.updateOne({ _id: 'probe:c1' }, { $set: { snapshot: theirs }, $inc: { rev: 1 } });

  await assert.rejects(rt.send('probe', 'c1', { type: 'note', seq: 2 }), RevisionConflictError);
  const after = await actors.findOne({ _id: 'probe:c1' });
  assert.equal(after?.rev, before.revision + 1);
  assert.equal(after?.snapshot, theirs);

  const retried = await rt.send('probe', 'c1', { type: 'note', seq: 3 });
  assert.deepEqual(ctx(retried).notes, [99, 3]);
  assert.equal(retried.revision, before.revision + 2);
  assert.deepEqual(retried.value, { working: 'waiting' });
});

test('lease: a live owner makes another instance wait then fail; once expired, the sweep takes over', async (t) => {
  const { started } = await fixture(t);
  const clock = { now: Date.now() };
  const now = () => clock.now;
  const a = await started(hang, { instanceId: 'A', leaseMs: 1_000, leaseWaitMs: 300, now });
  const bCalls: string[] = [];
  const bLogs = captureLogs();
  const b = await started(
    async ({ actorId, attempt }) => {
      bCalls.push(`${actorId}:${attempt}`);
      return `B:${actorId}:${attempt}`;
    },
    { instanceId: 'B', leaseMs: 1_000, leaseWaitMs: 300, now, logger: bLogs.logger },
  );

  await a.spawn('probe', 'job', { actorId: 'job' });
  const owned = await a.send('probe', 'job', { type: 'start', now: clock.now, timeoutMs: 600_000 });
  assert.equal(owned.owner, 'A');
  a.abandon(); // A dies holding the lease

  const waitStarted = performance.now();
  await assert.rejects(b.send('probe', 'job', { type: 'note', seq: 1 }), ActorBusyError);
  assert.ok(performance.now() - waitStarted >= 250, 'B waited for the lease before giving up');
  await b.sweep();
  assert.equal((await b.get('probe', 'job')).owner, 'A', 'a live lease is not taken over');

  clock.now += 5_000; // A's lease expires; B's periodic sweep (every 500 ms) takes the job over
  const finished = await untilDone(b, 'job');
  assert.deepEqual(finished.output, { result: 'B:job:1' });
  assert.equal(finished.owner, null);
  assert.deepEqual(bCalls, ['job:1']);
  const resumed = bLogs.lines.find((l) => l.msg === 'actor resumed');
  assert.equal(resumed?.previous_owner, 'A');
  assert.equal(resumed?.actor_id, 'job');
});

test('idle actors are evicted from memory, restored on demand; custodial ones stay; memory is capped', async (t) => {
  // 400 ms, not less: the checks that an actor is still loaded right after use must not race the
  // eviction on a loaded machine (at 50 ms they failed under a parallel test run).
  const rt = await (await fixture(t)).started(hang, { maxInMemory: 3 }, { idleEvictMs: 400 });

  await rt.spawn('probe', 'e1', { actorId: 'e1' });
  await rt.send('probe', 'e1', { type: 'note', seq: 1 });
  await rt.spawn('probe', 'busy', { actorId: 'busy' });
  await rt.send('probe', 'busy', { type: 'start', now: Date.now(), timeoutMs: 60_000 });
  assert.equal(rt.isLoaded('probe', 'e1'), true);
  await waitFor('e1 to be evicted', () => !rt.isLoaded('probe', 'e1'));
  await sleep(500); // busy has now been idle longer than idleEvictMs too
  assert.equal(rt.isLoaded('probe', 'busy'), true, 'custodial actors are never idle-evicted');

  const restored = await rt.send('probe', 'e1', { type: 'note', seq: 2 });
  assert.deepEqual(ctx(restored).notes, [1, 2]);
  assert.equal(restored.revision, 3);
  assert.equal(rt.isLoaded('probe', 'e1'), true);

  const ids = ['m1', 'm2', 'm3', 'm4', 'm5'];
  for (const id of ids) await rt.spawn('probe', id, { actorId: id });
  const loaded = [...ids, 'e1', 'busy'].filter((id) => rt.isLoaded('probe', id));
  assert.ok(loaded.length <= 3, `in memory: ${loaded.join(',')}`);
  assert.ok(loaded.includes('busy'));
  assert.ok(loaded.includes('m5'));
});

test('a snapshot the machine cannot restore: logged with the actor, stored as error, snapshot kept', async (t) => {
  const { state, started } = await fixture(t);
  const logs = captureLogs();
  // No grace lease: the edit below stands for an operator's repair made while nobody holds the actor.
  const rt = await started(hang, { logger: logs.logger, idleLeaseGraceMs: 0 });

  await rt.spawn('probe', 'old', { actorId: 'old' });
  const actors = state.store.collection<ActorDoc>('actors');
  const doc = await actors.findOne({ _id: 'probe:old' });
  const ancient = JSON.stringify({ ...JSON.parse(doc!.snapshot!), value: 'retiredState' });
  await actors.updateOne({ _id: 'probe:old' }, { $set: { snapshot: ancient, version: 1 }, $inc: { rev: 1 } });

  const view = await rt.send('probe', 'old', { type: 'note', seq: 1 });
  assert.equal(view.status, 'error');
  assert.match(view.error ?? '', /retiredState/);
  const stored = await actors.findOne({ _id: 'probe:old' });
  assert.equal(stored?.snapshot, ancient, 'the last good snapshot is kept for repair');
  assert.equal(stored?.custodial, false);
  assert.equal(stored?.owner, null);
  const lines = logs.lines.filter((l) => l.actor_kind === 'probe' && l.actor_id === 'old');
  assert.ok(lines.some((l) => l.msg === 'restoring a snapshot of another machine version'));
  assert.ok(lines.some((l) => l.msg === 'actor failed' && l.level === 50));

  const again = await rt.send('probe', 'old', { type: 'note', seq: 2 });
  assert.equal(again.status, 'error');
  assert.equal(again.revision, view.revision, 'a failed actor ignores events');
});

test('a migrate hook upgrades a snapshot written by an older machine version', async (t) => {
  const { state, started } = await fixture(t);
  const old = await started(hang, { instanceId: 'old' });
  await old.spawn('probe', 'm', { actorId: 'm' });
  await old.send('probe', 'm', { type: 'note', seq: 1 });
  await old.stop();
  const actors = state.store.collection<ActorDoc>('actors');
  const doc = await actors.findOne({ _id: 'probe:m' });
  const v1 = JSON.stringify({ ...JSON.parse(doc!.snapshot!), value: 'retiredState' });
  await actors.updateOne({ _id: 'probe:m' }, { $set: { snapshot: v1, version: 1 }, $inc: { rev: 1 } });

  const migrated: number[] = [];
  const rt = await started(
    hang,
    {},
    {
      migrate: (persisted, fromVersion) => {
        migrated.push(fromVersion);
        return { ...(persisted as object), value: 'idle' };
      },
    },
  );
  const view = await rt.send('probe', 'm', { type: 'note', seq: 2 });
  assert.deepEqual(migrated, [1]);
  assert.equal(view.status, 'active');
  assert.equal(view.value, 'idle');
  assert.equal(view.version, 2, 'written back with the current machine version');
  assert.deepEqual(ctx(view).notes, [1, 2]);
});

test('retention: the sweep deletes finished actors after retainFinishedMs and idle ones after expireIdleMs, never working or recently changed ones', async (t) => {
  const f = await fixture(t);
  let clock = Date.now();
  const retired: string[] = [];
  const onRetired = async (id: string) => void retired.push(id);
  const rt = await f.started(
    async (input) => (input.actorId === 'busy' ? hang(input) : `ok:${input.actorId}`),
    { now: () => clock },
    { expireIdleMs: 60_000, retainFinishedMs: 3_600_000, onRetired },
  );
  for (const id of ['idle-old', 'idle-fresh', 'done-old', 'busy']) await rt.spawn('probe', id, { actorId: id });
  for (const id of ['done-old', 'busy']) await rt.send('probe', id, { type: 'start', now: clock, timeoutMs: 10 * 3_600_000 });
  await untilDone(rt, 'done-old');

  clock += 61_000; // past expireIdleMs, not past retainFinishedMs
  await rt.send('probe', 'idle-fresh', { type: 'note', seq: 1 }); // changed just now
  await rt.sweep();
  await assert.rejects(rt.get('probe', 'idle-old'), ActorNotFoundError);
  assert.equal((await rt.get('probe', 'idle-fresh')).status, 'active');
  assert.equal((await rt.get('probe', 'done-old')).status, 'done', 'finished actors wait retainFinishedMs');
  assert.equal((await rt.get('probe', 'busy')).status, 'active', 'a working (custodial) actor is never expired');

  assert.deepEqual(retired, [], 'only finished actors are retired through the kind');
  clock += 3_600_000;
  await rt.sweep();
  await assert.rejects(rt.get('probe', 'done-old'), ActorNotFoundError);
  assert.deepEqual(retired, ['done-old'], 'the kind deleted what the actor kept elsewhere first');
  assert.equal((await rt.get('probe', 'busy')).status, 'active');
  // A deleted id starts afresh.
  const again = await rt.spawn('probe', 'idle-old', { actorId: 'idle-old' });
  assert.equal(again.status, 'active');
  assert.deepEqual((again.context as ProbeContext).notes, []);
});

test('refuses an id it cannot key (NUL, unpaired surrogate, empty, over 512) with InvalidActorIdError, storing nothing', async (t) => {
  const f = await fixture(t);
  const rt = await f.started(hang);
  const invalid = (err: unknown) => err instanceof InvalidActorIdError && err.code === 'invalid_request';
  for (const id of ['a\u0000b', 'a\ud800', '\udc00z', '', 'x'.repeat(513)]) {
    const at = JSON.stringify(id.slice(0, 10));
    await assert.rejects(rt.spawn('probe', id, { actorId: id }), invalid, at);
    await assert.rejects(rt.send('probe', id, { type: 'note', seq: 1 }), invalid, at);
    await assert.rejects(rt.askOrSpawn('probe', id, { actorId: id }, { type: 'note', seq: 1 }), invalid, at);
    await assert.rejects(rt.get('probe', id), invalid, at);
    assert.throws(() => rt.subscribe('probe', id, () => {}), invalid, at);
  }
  assert.equal(await f.state.store.collection('actors').countDocuments({}), 0);
  // Unusual but well-formed ids are ids like any other, kept as given.
  for (const id of ['😀 tab\t', '__proto__', 'x'.repeat(512)]) {
    const view = await rt.sendOrSpawn('probe', id, { actorId: id }, { type: 'note', seq: 7 });
    assert.equal(view.id, id);
    assert.deepEqual(ctx(await rt.get('probe', id)).notes, [7]);
  }
});
