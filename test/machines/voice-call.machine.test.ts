// The voice-call machine as an actor with injected effects and a simulated clock: the carrier's news
// moves the status; unanswered calls bill 0 and answered ones the answered seconds rounded up, never
// past the reservation; the ring and duration deadlines; controls answer whether they were taken;
// a persisted snapshot restored with `finalize` ends with gateway_restart at its last heartbeat.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, fromPromise, SimulatedClock, waitFor, type AnyActorRef } from 'xstate';
import {
  billableSeconds,
  voiceCallMachine,
  type DialInput,
  type NotifyInput,
  type DialOutput,
  type FinishInput,
  type FinishOutput,
} from '../../machines/voice-call.machine.ts';
import { input } from './voice-call-input.ts';

function harness() {
  const finished: FinishInput[] = [];
  const dials: number[] = [];
  const machine = voiceCallMachine.provide({
    actors: {
      dial: fromPromise<DialOutput, DialInput>(async () => {
        dials.push(1);
        return { carrierCallId: 'SIM1', at: 0 };
      }),
      notifyAnswered: fromPromise<void, NotifyInput>(async () => undefined),
      finish: fromPromise<FinishOutput, FinishInput>(async ({ input: i }) => {
        finished.push(i);
        return { costMicrocents: i.billedSeconds * 1000, at: 0 };
      }),
    },
  });
  return { machine, finished, dials };
}

const done = (actor: AnyActorRef) => waitFor(actor, (s) => s.status === 'done', { timeout: 2000 });

describe('voice-call machine', () => {
  it('bills answered seconds rounded up, capped at the reservation; nothing unanswered', () => {
    assert.equal(billableSeconds(null, 50_000, 600_000), 0);
    assert.equal(billableSeconds(1000, 1000, 600_000), 0);
    assert.equal(billableSeconds(1000, 1001, 600_000), 1);
    assert.equal(billableSeconds(1000, 13_000, 600_000), 12);
    assert.equal(billableSeconds(0, 700_000, 600_000), 600);
  });

  it('dials, rings, is answered and ends when the callee hangs up: completed, callee_hangup, billed to the second', async () => {
    const { machine, finished, dials } = harness();
    const actor = createActor(machine, { input: input() }).start();
    assert.equal(actor.getSnapshot().context.status, 'dialing');
    actor.send({ type: 'carrier.ringing', now: 100 });
    assert.equal(actor.getSnapshot().context.status, 'ringing');
    actor.send({ type: 'carrier.answered', now: 2_000 });
    assert.equal(actor.getSnapshot().context.status, 'in_progress');
    actor.send({ type: 'turn', now: 3_000, turn: { role: 'agent', text: 'Hello', start: 0, end: 1 }, latencyMs: 420 });
    actor.send({ type: 'carrier.ended', now: 14_500 });
    const end = await done(actor);
    assert.equal(dials.length, 1);
    assert.deepEqual(
      [end.context.status, end.context.endReason, end.context.billedSeconds, end.context.costMicrocents],
      ['completed', 'callee_hangup', 13, 13_000],
    );
    assert.deepEqual(end.context.latencies, [420]);
    assert.equal(finished.length, 1);
  });

  it('ends busy, no_answer (ring timeout) and canceled with 0 seconds', async () => {
    const busy = createActor(harness().machine, { input: input() }).start();
    busy.send({ type: 'carrier.ended', now: 500, status: 'busy' });
    assert.deepEqual(
      [(await done(busy)).context.status, busy.getSnapshot().context.endReason, busy.getSnapshot().context.billedSeconds],
      ['busy', 'dial_busy', 0],
    );

    const clock = new SimulatedClock();
    const ring = createActor(harness().machine, { input: input({ ringTimeoutMs: 5_000 }), clock }).start();
    ring.send({ type: 'carrier.ringing', now: 10 });
    clock.increment(5_000);
    const rang = await done(ring);
    assert.deepEqual([rang.context.status, rang.context.endReason, rang.context.billedSeconds, rang.context.endedAt], ['no_answer', 'ring_timeout', 0, 5_000]);

    const cancel = createActor(harness().machine, { input: input() }).start();
    const replies: unknown[] = [];
    cancel.on('control.result', (e) => replies.push(e));
    cancel.send({ type: 'api.hangup', now: 100 }); // not in progress: refused
    cancel.send({ type: 'api.cancel', now: 200 });
    assert.deepEqual((await done(cancel)).context.status, 'canceled');
    assert.deepEqual(
      replies.map((r) => (r as { ok: boolean }).ok),
      [false, true],
    );
  });

  it('hangs up at the maximum: max_duration, or insufficient_credit when the wallet set it', async () => {
    for (const creditLimited of [false, true]) {
      const clock = new SimulatedClock();
      const actor = createActor(harness().machine, { input: input({ maxDurationMs: 90_000, creditLimited }), clock }).start();
      actor.send({ type: 'carrier.answered', now: 1_000 });
      clock.increment(90_000);
      const end = await done(actor);
      assert.deepEqual([end.context.endReason, end.context.billedSeconds], [creditLimited ? 'insufficient_credit' : 'max_duration', 90]);
    }
  });

  it('restored after its instance died (finalize): ends gateway_restart at the last heartbeat, billed once', async () => {
    const first = harness();
    const live = createActor(first.machine, { input: input() }).start();
    live.send({ type: 'carrier.answered', now: 10_000 });
    live.send({ type: 'media.heartbeat', now: 41_000 });
    const persisted = JSON.parse(JSON.stringify(live.getPersistedSnapshot()));
    live.stop();
    const second = harness();
    const restored = createActor(second.machine, { snapshot: persisted, input: input() }).start();
    restored.send({ type: 'runtime.resumed', now: 500_000, mode: 'finalize' });
    const end = await done(restored);
    assert.deepEqual([end.context.status, end.context.endReason, end.context.billedSeconds], ['completed', 'gateway_restart', 31]);
    assert.equal(second.finished.length, 1);
  });

  it("an answer backdated before the dial (a carrier duration longer than the call) counts from the dial: billed the call's age", async () => {
    const actor = createActor(harness().machine, { input: input({ createdAt: 1_000 }) }).start();
    actor.send({ type: 'carrier.answered', now: 4_000 - 3_600_000 });
    actor.send({ type: 'carrier.ended', now: 4_000 });
    const end = await done(actor);
    assert.deepEqual([end.context.answeredAt, end.context.billedSeconds], [1_000, 3]);
  });

  it("the carrier's count bounds the bill: its end's news 4 s late bills what it counted; a later answer's news changes nothing", async () => {
    const billed = async (seconds: number | undefined) => {
      const actor = createActor(harness().machine, { input: input() }).start();
      actor.send({ type: 'carrier.answered', now: 2_000 }); // the stream's start
      actor.send({ type: 'carrier.answered', now: 1_500 }); // the callback, late, saying earlier
      actor.send({ type: 'carrier.ended', now: 14_000, ...(seconds === undefined ? {} : { seconds }) });
      const end = await done(actor);
      return [end.context.answeredAt, end.context.billedSeconds];
    };
    assert.deepEqual(await billed(8), [2_000, 8]);
    assert.deepEqual(await billed(30), [2_000, 12], 'a count longer than the call bills the call');
    assert.deepEqual(await billed(undefined), [2_000, 12]);
  });

  it('counts turns without keeping them: 230 long agent turns leave its snapshot a few KB; a dial refused for its credentials is named', async () => {
    const actor = createActor(harness().machine, { input: input() }).start();
    actor.send({ type: 'carrier.answered', now: 1_000 });
    const text = 'A long reply from the model, said in full. '.repeat(40); // ~1.7 KB
    for (let i = 0; i < 230; i++)
      actor.send({ type: 'turn', now: 2_000 + i, turn: { role: 'agent', text, heard_text: text, start: i, end: i + 1 }, latencyMs: 900, agentState: 'S' });
    const snap = actor.getSnapshot();
    const bytes = Buffer.byteLength(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop(); // its call deadline's timer
    // The transcript is the live side's to record (src/voice/transcript.ts): the machine keeps counts and metrics.
    assert.deepEqual([snap.context.turnCount, snap.context.turns, snap.context.latencies.length, snap.context.agentState], [230, undefined, 200, 'S']);
    assert.ok(bytes < 6 * 1024, `the snapshot after 230 turns is ${bytes} bytes`);

    const refused = voiceCallMachine.provide({
      actors: {
        dial: fromPromise<DialOutput, DialInput>(async () => {
          throw Object.assign(new Error('twilio refused the credentials (401)'), { endReason: 'carrier_credentials_refused' });
        }),
        finish: fromPromise<FinishOutput, FinishInput>(async () => ({ costMicrocents: 0, at: 0 })),
      },
    });
    const failed = await done(createActor(refused, { input: input() }).start());
    assert.deepEqual([failed.context.status, failed.context.endReason], ['failed', 'carrier_credentials_refused']);
  });
});
