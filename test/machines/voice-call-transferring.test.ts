// The voice-call machine in `transferring` (issue 41 §2): the call's maximum still ends it when the
// carrier never takes the hand-off, also after a restore on the instance that kept the media (a
// `runtime.resumed` with `resume` re-arms the deadline; restoring loses `after` timers) without
// asking the carrier again; a second transfer (the API's or the agent's) while one is under way is
// refused or ignored, never a second hand-off; a hand-off asked of the carrier whose answer a restart
// lost ends gateway_restart at the ask, and the call is not hung up.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, fromPromise, SimulatedClock, waitFor, type AnyActorRef } from 'xstate';
import {
  voiceCallMachine,
  type DialInput,
  type DialOutput,
  type FinishInput,
  type FinishOutput,
  type NotifyInput,
  type TransferInput,
  type TransferOutput,
} from '../../machines/voice-call.machine.ts';
import { input } from './voice-call-input.ts';

/** A carrier that never answers the hand-off (its request hangs): only the call's maximum ends it. */
function harness() {
  const transfers: TransferInput[] = [];
  const finished: FinishInput[] = [];
  const machine = voiceCallMachine.provide({
    actors: {
      dial: fromPromise<DialOutput, DialInput>(async () => ({ carrierCallId: 'SIM1', at: 0 })),
      notifyAnswered: fromPromise<void, NotifyInput>(async () => undefined),
      transfer: fromPromise<TransferOutput, TransferInput>(({ input: i }) => {
        transfers.push(i);
        return new Promise<TransferOutput>(() => undefined);
      }),
      finish: fromPromise<FinishOutput, FinishInput>(async ({ input: i }) => {
        finished.push(i);
        return { costMicrocents: i.billedSeconds * 1000, at: 0 };
      }),
    },
  });
  return { machine, transfers, finished };
}

const done = (actor: AnyActorRef) => waitFor(actor, (s) => s.status === 'done', { timeout: 2000 });
const settle = () => new Promise((r) => setImmediate(r));

describe('voice-call machine: transferring', () => {
  it('a hand-off the carrier never takes ends at the call maximum', async () => {
    const clock = new SimulatedClock();
    const { machine, finished } = harness();
    const actor = createActor(machine, { input: input({ maxDurationMs: 90_000 }), clock }).start();
    actor.send({ type: 'carrier.answered', now: 1_000 });
    actor.send({ type: 'api.transfer', now: 20_000, to: '+919800000041' });
    assert.equal(actor.getSnapshot().context.status, 'in_progress');
    clock.increment(90_000);
    const end = await done(actor);
    assert.deepEqual([end.context.endReason, end.context.billedSeconds, finished.length], ['max_duration', 90, 1]);
  });

  it('restored on the instance that kept the media (resume): the maximum re-armed, the carrier not asked again', async () => {
    const first = harness();
    const live = createActor(first.machine, { input: input({ maxDurationMs: 90_000 }), clock: new SimulatedClock() }).start();
    live.send({ type: 'carrier.answered', now: 1_000 });
    live.send({ type: 'agent.transfer', now: 20_000, to: '+919800000041' });
    live.send({ type: 'media.heartbeat', now: 30_000 });
    const persisted = JSON.parse(JSON.stringify(live.getPersistedSnapshot()));
    live.stop();

    const clock = new SimulatedClock();
    const second = harness();
    const restored = createActor(second.machine, { snapshot: persisted, input: input(), clock }).start();
    await settle();
    // Restoring re-runs the in-flight step once, with its input (the agent's: no second hand-off line).
    assert.deepEqual(
      second.transfers.map((t) => t.by),
      ['agent'],
    );
    restored.send({ type: 'runtime.resumed', now: 40_000, mode: 'resume' });
    await settle();
    assert.equal(second.transfers.length, 1, 'the resume does not ask the carrier a second time');
    clock.increment(51_000); // the answer (1 s) + 90 s, 51 s after the resume at 40 s
    const end = await done(restored);
    assert.deepEqual([end.context.endReason, end.context.endedAt, end.context.billedSeconds], ['max_duration', 91_000, 90]);
    assert.equal(second.finished.length, 1);
  });

  it('restored without its media after the carrier was asked (its answer lost): gateway_restart at the ask, and the finish is told not to hang up', async () => {
    const finished: FinishInput[] = [];
    const machine = voiceCallMachine.provide({
      actors: {
        dial: fromPromise<DialOutput, DialInput>(async () => ({ carrierCallId: 'SIM1', at: 0 })),
        notifyAnswered: fromPromise<void, NotifyInput>(async () => undefined),
        transfer: fromPromise<TransferOutput, TransferInput>(async () => ({ transferred: false, asked: true, at: 25_000 })),
        finish: fromPromise<FinishOutput, FinishInput>(async ({ input: i }) => {
          finished.push(i);
          return { costMicrocents: 0, at: 0 };
        }),
      },
    });
    const actor = createActor(machine, { input: input(), clock: new SimulatedClock() }).start();
    actor.send({ type: 'carrier.answered', now: 1_000 });
    actor.send({ type: 'media.heartbeat', now: 20_000 });
    actor.send({ type: 'api.transfer', now: 22_000, to: '+919800000041' });
    const end = await done(actor);
    assert.deepEqual([end.context.endReason, end.context.billedSeconds], ['gateway_restart', 24]);
    assert.deepEqual([finished[0]?.handOffAsked, finished[0]?.transferTo], [true, null]);
  });

  it('a second transfer while one is under way: the API is refused, the agent ignored', async () => {
    const { machine, transfers } = harness();
    const actor = createActor(machine, { input: input(), clock: new SimulatedClock() }).start();
    const replies: boolean[] = [];
    actor.on('control.result', (e) => replies.push(e.ok));
    actor.send({ type: 'carrier.answered', now: 1_000 });
    actor.send({ type: 'api.transfer', now: 2_000, to: '+919800000041' });
    actor.send({ type: 'api.transfer', now: 2_100, to: '+919800000042' });
    actor.send({ type: 'agent.transfer', now: 2_200, to: '+919800000043' });
    await settle();
    assert.deepEqual(replies, [true, false]);
    assert.deepEqual(
      transfers.map((t) => t.to),
      ['+919800000041'],
    );
    assert.equal(actor.getSnapshot().context.transferTo, '+919800000041');
    actor.stop();
  });
});
