// The voice-call machine's answering-machine news (issue 41 §1): the first `answered_by` is kept and
// told once (its effect spawned with it); a repeated or later one (Twilio's AMD callback sent twice, a
// second decision) changes nothing; a `voicemail` end bills the answered seconds as any end; the
// decision survives a persistence round trip, and a restored call is not told it again.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createActor, fromPromise, waitFor } from 'xstate';
import {
  voiceCallMachine,
  type AnsweredByInput,
  type DialInput,
  type DialOutput,
  type FinishInput,
  type FinishOutput,
  type NotifyInput,
} from '../../machines/voice-call.machine.ts';
import { input } from './voice-call-input.ts';

function harness() {
  const told: AnsweredByInput[] = [];
  const finished: FinishInput[] = [];
  const machine = voiceCallMachine.provide({
    actors: {
      dial: fromPromise<DialOutput, DialInput>(async () => ({ carrierCallId: 'SIM1', at: 0 })),
      notifyAnswered: fromPromise<void, NotifyInput>(async () => undefined),
      notifyAnsweredBy: fromPromise<void, AnsweredByInput>(async ({ input: i }) => void told.push(i)),
      finish: fromPromise<FinishOutput, FinishInput>(async ({ input: i }) => {
        finished.push(i);
        return { costMicrocents: i.billedSeconds * 1000, at: 0 };
      }),
    },
  });
  return { machine, told, finished };
}

const machineNews = { answeredBy: 'machine' as const, detail: 'beep', source: 'gateway' as const, decisionMs: 2500 };

describe('voice-call machine: answered_by', () => {
  it('keeps and tells the first decision only; a voicemail end bills the answered seconds', async () => {
    const { machine, told, finished } = harness();
    const actor = createActor(machine, { input: input() }).start();
    actor.send({ type: 'carrier.answered', now: 1000 });
    actor.send({ type: 'answered_by', now: 3500, ...machineNews });
    actor.send({ type: 'answered_by', now: 3600, ...machineNews, detail: 'again' });
    actor.send({ type: 'answered_by', now: 3700, answeredBy: 'human', detail: 'human', source: 'twilio', decisionMs: 2700 });
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(actor.getSnapshot().context.answeredBy, machineNews);
    assert.deepEqual(
      told.map((t) => t.news),
      [machineNews],
    );
    actor.send({ type: 'media.ending', now: 12_200, reason: 'voicemail' });
    await waitFor(actor, (s) => s.status === 'done', { timeout: 2000 });
    assert.deepEqual([finished[0]!.status, finished[0]!.reason, finished[0]!.billedSeconds], ['completed', 'voicemail', 12]);
  });

  it('the decision survives a persistence round trip and is not told again', async () => {
    const first = harness();
    const actor = createActor(first.machine, { input: input() }).start();
    actor.send({ type: 'carrier.answered', now: 1000 });
    actor.send({ type: 'answered_by', now: 3500, ...machineNews });
    await new Promise((r) => setTimeout(r, 20));
    const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
    actor.stop();
    const second = harness();
    const restored = createActor(second.machine, { snapshot: persisted, input: input() }).start();
    restored.send({ type: 'answered_by', now: 4000, ...machineNews, detail: 'late' });
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(restored.getSnapshot().context.answeredBy, machineNews);
    assert.equal(second.told.filter((t) => t.news.detail === 'late').length, 0);
    restored.stop();
  });
});
