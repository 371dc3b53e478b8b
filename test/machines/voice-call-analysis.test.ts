// The voice-call machine's analysis (issue 43 §2): a call that asked for one goes from its charge
// to `analyzing` and stores what the effect gave; its status, end reason and cost stay the
// charge's. A call that asked for none ends at its charge, as before. An effect that throws
// stores `failed`. A snapshot persisted mid-analysis restores in `analyzing` and runs it again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, fromPromise, waitFor } from 'xstate';
import * as vc from '../../machines/voice-call.machine.ts';
import { input } from './voice-call-input.ts';

const done: vc.CallAnalysisResult = {
  ...{ status: 'completed', model: 'chat', summary: 'ok', fields: { n: 1 }, usage: { prompt_tokens: 10, completion_tokens: 2 } },
  ...{ costMicrocents: 12, attempts: 1, error: null, at: 5000 },
};

function harness(analyze: (i: vc.AnalyzeInput) => Promise<vc.CallAnalysisResult>) {
  const asked: vc.AnalyzeInput[] = [];
  const machine = vc.voiceCallMachine.provide({
    actors: {
      dial: fromPromise<vc.DialOutput, vc.DialInput>(async () => ({ carrierCallId: 'SIM1', at: 0 })),
      notifyAnswered: fromPromise<void, vc.NotifyInput>(async () => undefined),
      finish: fromPromise<vc.FinishOutput, vc.FinishInput>(async ({ input: i }) => ({ costMicrocents: i.billedSeconds * 1000, at: 0 })),
      analyze: fromPromise<vc.CallAnalysisResult, vc.AnalyzeInput>(async ({ input: i }) => {
        asked.push(i);
        return analyze(i);
      }),
    },
  });
  return { machine, asked };
}

/** A call answered at 1 s and hung up by the callee at 4.5 s (4 s billed). */
function talk(actor: ReturnType<typeof createActor<ReturnType<typeof harness>['machine']>>): void {
  actor.send({ type: 'carrier.answered', now: 1000 });
  actor.send({ type: 'action', now: 2000, action: { action: 'CREATE_DISPUTE', intent: 'X', entities: {}, at: 1 } });
  actor.send({ type: 'carrier.ended', now: 4500 });
}

describe('voice-call machine: analysis', () => {
  it('after the charge, analyzing stores the result; the call keeps its own status and cost', async () => {
    const { machine, asked } = harness(async () => done);
    const actor = createActor(machine, { input: input({ analyze: true }) }).start();
    talk(actor);
    await waitFor(actor, (s) => s.status === 'done', { timeout: 2000 });
    const c = actor.getSnapshot().context;
    assert.deepEqual([c.status, c.endReason, c.billedSeconds, c.costMicrocents], ['completed', 'callee_hangup', 4, 4000]);
    assert.deepEqual(c.analysis, done);
    assert.equal(asked.length, 1);
    assert.deepEqual(
      asked[0]!.outcome.actions.map((a) => a.action),
      ['CREATE_DISPUTE'],
    );
  });

  it('a call that asked for none ends at its charge; an effect that throws stores failed', async () => {
    const none = harness(async () => done);
    const plain = createActor(none.machine, { input: input() }).start();
    talk(plain);
    await waitFor(plain, (s) => s.status === 'done', { timeout: 2000 });
    assert.deepEqual([none.asked.length, plain.getSnapshot().context.analysis], [0, undefined]);
    const broken = harness(async () => {
      throw new Error('lost');
    });
    const actor = createActor(broken.machine, { input: input({ analyze: true }) }).start();
    talk(actor);
    await waitFor(actor, (s) => s.status === 'done', { timeout: 2000 });
    const c = actor.getSnapshot().context;
    assert.deepEqual([c.analysis?.status, c.analysis?.error?.code, c.status, c.costMicrocents], ['failed', 'internal_error', 'completed', 4000]);
  });

  it('persisted mid-analysis, restores in analyzing and runs it again', async () => {
    let release!: () => void;
    const first = harness(() => new Promise<vc.CallAnalysisResult>((r) => (release = () => r(done))));
    const actor = createActor(first.machine, { input: input({ analyze: true }) }).start();
    talk(actor);
    await waitFor(actor, (s) => s.matches('analyzing'), { timeout: 2000 });
    const saved = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop();
    release();
    const second = harness(async () => ({ ...done, summary: 'again' }));
    const restored = createActor(second.machine, { snapshot: saved, input: input({ analyze: true }) }).start();
    await waitFor(restored, (s) => s.status === 'done', { timeout: 2000 });
    assert.equal(second.asked.length, 1, 'the in-flight analysis re-runs');
    assert.equal(restored.getSnapshot().context.analysis?.summary, 'again');
  });
});
