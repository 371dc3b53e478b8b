// The realtime-session machine, pure and as an actor with injected effects: ticks roll when their
// audio is in (settling exactly the tick, carrying the rest), a close during a roll waits for it,
// a wallet that cannot cover the next tick ends the session, and closing bills the rest rounded up
// to a second; a persisted snapshot restored with `finalize` closes with what it recorded.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, fromPromise, waitFor } from 'xstate';
import {
  realtimeSessionMachine,
  unbilledSeconds,
  type FinalizeInput,
  type RealtimeSessionInput,
  type RollInput,
  type RollOutput,
} from '../../machines/realtime-session.machine.ts';

const input = (over: Partial<RealtimeSessionInput> = {}): RealtimeSessionInput => ({
  sessionId: 'rts_1',
  account: 'user:1',
  model: 'stt-local',
  requestId: 'req_1',
  createdAt: 0,
  tickSeconds: 60,
  tickMaxAgeMs: 300_000,
  hold: { id: 'h0' },
  spec: {},
  ...over,
});

function harness(opts: { roll?: (i: RollInput) => Promise<RollOutput> } = {}) {
  const rolls: RollInput[] = [];
  const finals: FinalizeInput[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const machine = realtimeSessionMachine.provide({
    actors: {
      rollTick: fromPromise<RollOutput, RollInput>(async ({ input: i }) => {
        rolls.push(i);
        if (opts.roll) return opts.roll(i);
        await gate;
        return { hold: { id: `h${i.tick + 1}` }, at: 1000 };
      }),
      finalize: fromPromise<{ at: number; seconds: number }, FinalizeInput>(async ({ input: i }) => {
        finals.push(i);
        return { at: 2000, seconds: i.seconds };
      }),
    },
  });
  return { machine, rolls, finals, release };
}

describe('realtime-session machine', () => {
  it('counts whole seconds not yet billed', () => {
    assert.equal(unbilledSeconds({ audioMs: 0, billedSeconds: 0 }), 0);
    assert.equal(unbilledSeconds({ audioMs: 1, billedSeconds: 0 }), 1);
    assert.equal(unbilledSeconds({ audioMs: 61_000, billedSeconds: 60 }), 1);
    assert.equal(unbilledSeconds({ audioMs: 60_000, billedSeconds: 60 }), 0);
  });

  it('rolls a full tick (settling exactly its seconds), waits for the roll before closing, bills the rest rounded up', async () => {
    const h = harness();
    const actor = createActor(h.machine, { input: input() }).start();
    actor.send({ type: 'audio.progress', audioMs: 30_000, now: 10 });
    assert.deepEqual(actor.getSnapshot().value, { open: 'streaming' });
    actor.send({ type: 'audio.progress', audioMs: 61_500, now: 20 });
    assert.deepEqual(actor.getSnapshot().value, { open: 'rolling' });
    assert.equal(h.rolls[0]!.seconds, 60);
    assert.equal(h.rolls[0]!.tick, 0);
    actor.send({ type: 'client.closed', audioMs: 62_100, vanished: false });
    assert.deepEqual(actor.getSnapshot().value, { open: 'rolling' }, 'the roll in flight finishes first');
    h.release();
    await waitFor(actor, (s) => s.status === 'done');
    assert.equal(h.finals.length, 1);
    assert.deepEqual(
      { tick: h.finals[0]!.tick, hold: h.finals[0]!.hold, seconds: h.finals[0]!.seconds, reason: h.finals[0]!.reason },
      { tick: 1, hold: { id: 'h1' }, seconds: 3, reason: 'client_closed' },
    );
    assert.equal(actor.getSnapshot().context.chargedSeconds, 63);
  });

  it('a tick grown old rolls without its audio; a wallet that cannot cover the next ends the session without another charge', async () => {
    const h = harness({ roll: async () => ({ hold: null, at: 5, error: { code: 'insufficient_credit', message: 'top up' } }) });
    const actor = createActor(h.machine, { input: input({ tickMaxAgeMs: 1000 }) }).start();
    actor.send({ type: 'audio.progress', audioMs: 2_500, now: 1500 });
    await waitFor(actor, (s) => s.status === 'done');
    assert.equal(h.rolls[0]!.seconds, 3);
    assert.equal(h.finals[0]!.seconds, 0);
    assert.equal(h.finals[0]!.hold, null);
    const ctx = actor.getSnapshot().context;
    assert.equal(ctx.ending!.reason, 'insufficient_credit');
    assert.equal(ctx.chargedSeconds, 3);
  });

  it('restored with finalize (its socket died with its instance), it closes and bills what the snapshot recorded', async () => {
    const h = harness();
    const first = createActor(h.machine, { input: input() }).start();
    first.send({ type: 'audio.progress', audioMs: 4_200, now: 10 });
    const persisted = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
    first.stop();
    const restored = createActor(h.machine, { snapshot: persisted, input: input() }).start();
    restored.send({ type: 'runtime.resumed', now: 100, mode: 'resume' });
    assert.deepEqual(restored.getSnapshot().value, { open: 'streaming' }, 'a plain resume carries on');
    restored.send({ type: 'runtime.resumed', now: 100, mode: 'finalize' });
    await waitFor(restored, (s) => s.status === 'done');
    assert.equal(h.finals[0]!.seconds, 5);
    assert.equal(h.finals[0]!.reason, 'orphaned');
  });
});
