// The transcription job machine, pure and as an actor with injected fake effects: the inline path,
// failover before acceptance, never moving once accepted, callbacks, failure without a charge, and
// a restore while waiting on a provider that re-arms the poll from the deadline kept in context.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createActor, fromPromise, initialTransition, SimulatedClock, transition, type AnyMachineSnapshot } from 'xstate';
import {
  transcriptionJobMachine,
  type FailInput,
  type JobResultSummary,
  type FinishInput,
  type PollInput,
  type PollOutput,
  type SubmitInput,
  type SubmitOutput,
  type TranscriptionJobContext,
} from '../../machines/transcription-job.machine.ts';

const input = { jobId: 'txjob_1', account: 'user:1', model: 'stt-x', createdAt: 1_000, routes: 2, spec: { audioKey: 'jobs/txjob_1/audio' } };
const ctx = (s: AnyMachineSnapshot) => s.context as TranscriptionJobContext;
const summary: JobResultSummary = { resultKey: 'jobs/txjob_1/result', language: 'en-US', duration: 61, speakers: 2, segments: 4 };

/** Fake effects that record their calls; each answers from a queue or a function. */
function effects(plan: { submit: (i: SubmitInput) => SubmitOutput; poll?: (i: PollInput) => PollOutput }) {
  const calls = { submit: [] as SubmitInput[], poll: [] as PollInput[], finish: [] as FinishInput[], fail: [] as FailInput[] };
  const machine = transcriptionJobMachine.provide({
    actors: {
      submit: fromPromise(async ({ input }: { input: SubmitInput }) => {
        calls.submit.push(input);
        return plan.submit(input);
      }),
      poll: fromPromise(async ({ input }: { input: PollInput }) => {
        calls.poll.push(input);
        return plan.poll!(input);
      }),
      finish: fromPromise(async ({ input }: { input: FinishInput }) => {
        calls.finish.push(input);
        return { result: summary, at: 9_000 };
      }),
      fail: fromPromise(async ({ input }: { input: FailInput }) => {
        calls.fail.push(input);
        return { at: 9_500 };
      }),
    },
  });
  return { machine, calls };
}

async function settle(actor: { getSnapshot(): AnyMachineSnapshot }, value: string | object): Promise<void> {
  // Effects resolve on later ticks and `after(0)` on a real timer: wait up to 2 s, checking often.
  for (const until = Date.now() + 2000; Date.now() < until; ) {
    if (JSON.stringify(actor.getSnapshot().value) === JSON.stringify(value)) return;
    await new Promise((r) => setTimeout(r, 1));
  }
  assert.fail(`never reached ${JSON.stringify(value)}; at ${JSON.stringify(actor.getSnapshot().value)}`);
}

test('pure: a job starts processing at once, submitting to its first route', () => {
  const [s] = initialTransition(transcriptionJobMachine, input);
  assert.deepEqual(s.value, { processing: 'submitting' });
  assert.equal(ctx(s).routeIndex, 0);
  assert.equal(ctx(s).providerJobId, null);
});

test('inline (offline engine or a provider without jobs): submit transcribes, finish charges, completed', async () => {
  const { machine, calls } = effects({ submit: () => ({ kind: 'inline', rawKey: 'jobs/txjob_1/raw' }) });
  const actor = createActor(machine, { input }).start();
  await settle(actor, 'completed');
  assert.deepEqual(calls.finish, [{ jobId: 'txjob_1', spec: input.spec, rawKey: 'jobs/txjob_1/raw' }]);
  assert.deepEqual(ctx(actor.getSnapshot()).result, summary);
  assert.equal(calls.fail.length, 0);
});

test('the job stays with the route that accepted it (the router chose it, failing over before acceptance)', async () => {
  let polls = 0;
  const { machine, calls } = effects({
    submit: () => ({ kind: 'accepted', providerJobId: 'prov-7', routeIndex: 1, at: 1_000, pollDelayMs: 0 }),
    poll: () => (++polls < 3 ? { state: 'pending', at: 2_000, pollDelayMs: 0 } : { state: 'completed', rawKey: 'jobs/txjob_1/raw' }),
  });
  const actor = createActor(machine, { input }).start();
  await settle(actor, 'completed');
  assert.equal(calls.submit.length, 1, 'one submission: failover is the router’s');
  assert.ok(calls.poll.every((p) => p.routeIndex === 1 && p.providerJobId === 'prov-7'));
  assert.deepEqual(
    calls.poll.map((p) => p.polls),
    [0, 1, 2],
  );
  assert.equal(calls.finish.length, 1);
});

test('a failure nobody can retry fails the job: fail is called, finish (the charge) never', async () => {
  const { machine, calls } = effects({
    submit: () => {
      throw Object.assign(new Error('Audio could not be decoded.'), { retryable: false, code: 'invalid_audio' });
    },
  });
  const actor = createActor(machine, { input }).start();
  await settle(actor, 'failed');
  assert.deepEqual(calls.fail, [{ jobId: 'txjob_1', spec: input.spec, error: { code: 'invalid_audio', message: 'Audio could not be decoded.' } }]);
  assert.equal(calls.finish.length, 0);
  assert.deepEqual(ctx(actor.getSnapshot()).error, { code: 'invalid_audio', message: 'Audio could not be decoded.' });
});

test('a submission no route could take fails the job, tried once (the router tried every route); a provider that reports failure fails it too', async () => {
  const exhausted = effects({
    submit: () => {
      throw Object.assign(new Error('503'), { retryable: true, code: 'model_unavailable' });
    },
  });
  const a = createActor(exhausted.machine, { input }).start();
  await settle(a, 'failed');
  assert.equal(exhausted.calls.submit.length, 1);
  const reported = effects({
    submit: () => ({ kind: 'accepted', providerJobId: 'p', routeIndex: 0, at: 0, pollDelayMs: 0 }),
    poll: () => ({ state: 'failed', error: { code: 'upstream_error', message: 'The provider could not transcribe the recording.' } }),
  });
  const b = createActor(reported.machine, { input }).start();
  await settle(b, 'failed');
  assert.equal(reported.calls.finish.length, 0);
  assert.equal(ctx(b.getSnapshot()).error?.code, 'upstream_error');
});

test('a callback with the stored transcript finishes without polling; one for another job is ignored', async () => {
  const clock = new SimulatedClock();
  const { machine, calls } = effects({
    submit: () => ({ kind: 'accepted', providerJobId: 'prov-9', routeIndex: 0, at: 0, pollDelayMs: 60_000 }),
    poll: () => ({ state: 'pending', at: 0, pollDelayMs: 60_000 }),
  });
  const actor = createActor(machine, { input, clock }).start();
  await settle(actor, { processing: 'waiting' });
  actor.send({ type: 'provider.callback', providerJobId: 'someone-else', rawKey: 'x' });
  assert.deepEqual(actor.getSnapshot().value, { processing: 'waiting' });
  actor.send({ type: 'provider.callback', providerJobId: 'prov-9', rawKey: 'jobs/txjob_1/raw' });
  await settle(actor, 'completed');
  assert.equal(calls.poll.length, 0);
  assert.deepEqual(calls.finish, [{ jobId: 'txjob_1', spec: input.spec, rawKey: 'jobs/txjob_1/raw' }]);
});

test('a callback without the result polls at once', async () => {
  const clock = new SimulatedClock();
  const { machine, calls } = effects({
    submit: () => ({ kind: 'accepted', providerJobId: 'prov-9', routeIndex: 0, at: 0, pollDelayMs: 60_000 }),
    poll: () => ({ state: 'completed', rawKey: 'k' }),
  });
  const actor = createActor(machine, { input, clock }).start();
  await settle(actor, { processing: 'waiting' });
  actor.send({ type: 'provider.callback', providerJobId: 'prov-9' });
  await settle(actor, 'completed');
  assert.equal(calls.poll.length, 1);
});

test('persisted while waiting, restored: the poll is re-armed from the deadline in context, not lost', async () => {
  const clock = new SimulatedClock();
  const first = effects({ submit: () => ({ kind: 'accepted', providerJobId: 'prov-1', routeIndex: 0, at: 10_000, pollDelayMs: 30_000 }) });
  const actor = createActor(first.machine, { input, clock }).start();
  await settle(actor, { processing: 'waiting' });
  assert.equal(ctx(actor.getSnapshot()).nextPollAt, 40_000);
  const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
  actor.stop();

  const second = effects({ submit: () => assert.fail('never submitted twice'), poll: () => ({ state: 'completed', rawKey: 'k' }) });
  const clock2 = new SimulatedClock();
  const restored = createActor(second.machine, { snapshot: persisted, clock: clock2, input }).start();
  restored.send({ type: 'runtime.resumed', now: 25_000, mode: 'resume' });
  assert.equal(ctx(restored.getSnapshot()).pollDelayMs, 15_000, 'what is left until the deadline');
  clock2.increment(14_999);
  await new Promise((r) => setImmediate(r));
  assert.equal(second.calls.poll.length, 0);
  clock2.increment(1);
  await settle(restored, 'completed');
  assert.equal(second.calls.poll.length, 1);
  assert.equal(second.calls.submit.length, 0);
});

test('pure: the snapshot stays small (no transcript in context)', () => {
  let [s] = initialTransition(transcriptionJobMachine, input);
  [s] = transition(transcriptionJobMachine, s, {
    type: 'xstate.done.actor.submit',
    output: { kind: 'accepted', providerJobId: 'p', at: 0, pollDelayMs: 5 },
  } as never);
  assert.ok(JSON.stringify(s.context).length < 1024);
});

test('a step cut because the lease was lost is not the job’s failure: no failover, no `failing`, and a restore re-runs it', async () => {
  let first = true;
  const { machine, calls } = effects({
    submit: () => {
      if (first) {
        first = false;
        throw Object.assign(new Error('The job moved to another owner.'), { code: 'superseded', retryable: false });
      }
      return { kind: 'inline', rawKey: 'jobs/txjob_1/raw.json' };
    },
  });
  const actor = createActor(machine, { input }).start();
  // What the store holds: the job with its submission in flight (the copy that sees the cut is never written).
  const stored = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(actor.getSnapshot().value, { processing: 'submitting' });
  assert.equal(ctx(actor.getSnapshot()).routeIndex, 0, 'no failover to the next route');
  assert.equal(calls.fail.length, 0, 'nothing returned, nothing notified');
  // The new owner restores the stored state: the step runs again and the job completes.
  const restored = createActor(machine, { snapshot: stored, input }).start();
  actor.stop();
  await settle(restored, 'completed');
  assert.equal(calls.submit.length, 2);
  assert.equal(calls.fail.length, 0);
});
