// Outbound calls end to end through the simulator carrier, over real loopback sockets: the simulated
// callee answers (or not) after its script's delay, opens the media stream to the gateway and speaks
// Twilio's Media Streams protocol; its speech is espeak-ng's (tts-local), heard by the gateway's VAD
// and recognised by a scripted stt upstream (an OpenAI-compatible fake: pocketsphinx on 8 kHz
// μ-law is too unreliable for exact assertions), understood by the demo intent pack, answered with
// pre-rendered tts-local audio. What is asserted is what a client reads back: statuses, end reasons,
// the transcript with what was heard, the outcome, the charge in the wallet, the webhook events.
// The intent agent's flows and its credit guard (calls-agents-and-ends.test.ts and calls-api.test.ts
// have the rest; three files so their calls run side by side).
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestGateway } from '../helper.ts';
import { assertCreditGuarded, ended, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';
import { simulatedVoice, type ScriptedStt, type SimulatedVoice } from './simulated.ts';
import { readForm } from '../fakes/audio.ts';

describe('voice calls through the simulator: the intent agent', () => {
  const v = simulatedVoice();
  let gw: TestGateway;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  before(() => {
    ({ gw, stt, acc } = v);
  });
  const dial = (...args: Parameters<SimulatedVoice['dial']>) => v.dial(...args);

  it('runs the intent agent: ATM complaint → ASK → "yes" → CREATE_DISPUTE on the amount said before the yes, transcript and outcome, billed to the second once', async () => {
    stt.say('ATM did not give 2000 rupees but my account got debited', 'haan');
    const before = await walletMicrocents(gw, acc.session);
    const sttBefore = stt.server.requests.length;
    const res = await dial('+919800000010', { metadata: { ticket: 'T-1' } });
    assert.equal(res.status, 202, res.text);
    assert.match(res.body.id, /^call_[0-9a-f]{24}$/);
    assert.deepEqual(
      [res.body.object, res.body.status, res.body.to, res.body.max_duration_seconds, res.body.metadata],
      ['voice.call', 'queued', '+919800000010', 600, { ticket: 'T-1' }],
    );
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    const turns = c.transcript.map((t: { role: string; text: string; response_id?: string }) => [t.role, t.response_id ?? t.text]);
    assert.deepEqual(turns, [
      ['agent', 'GEN.GREETING'],
      ['callee', 'ATM did not give 2000 rupees but my account got debited'],
      ['agent', 'BANKING.DISPUTE.ASK_RAISE'],
      ['callee', 'haan'],
      ['agent', 'BANKING.DISPUTE.CREATED'],
    ]);
    assert.equal(c.transcript[2].intent, 'BANKING.ATM.CASH_NOT_DISPENSED');
    assert.equal(c.transcript[4].heard_text, c.transcript[4].text, 'played to the end');
    assert.deepEqual(
      c.outcome.actions.map((a: { action: string; intent: string }) => [a.action, a.intent]),
      [['CREATE_DISPUTE', 'BANKING.ATM.CASH_NOT_DISPENSED']],
    );
    assert.equal(c.outcome.actions[0].entities.amount, 2000, JSON.stringify(c.outcome.actions[0]));
    assert.deepEqual(c.transcript[3].entities ?? {}, {}, "the yes's own entities: none");
    assert.equal(c.outcome.final_state, 'DISPUTE_CREATED');
    // Each utterance went to the recogniser with what the agent had just said: after the greeting,
    // the pack's keywords; after the ASK, its question and yes/no words (OpenAI's prompt, the terms folded in).
    const prompts = await Promise.all(
      stt.server.requests.slice(sttBefore).map(async (r) => (await readForm(r.raw, r.headers['content-type']))!.fields.get('prompt')?.[0] ?? ''),
    );
    assert.equal(prompts.length, 2, JSON.stringify(prompts));
    assert.match(prompts[0]!, /^Hello! How can I help you today\?\n.*not dispensed/);
    assert.match(prompts[1]!, /^Sorry about that\. Shall I raise a dispute for the debited amount\?\nyes, no, .*haan/);
    assert.equal(c.metrics.turns, 5);
    assert.ok(c.metrics.turn_latency_ms.p50 >= 0 && c.metrics.turn_latency_ms.p50 < 3000, JSON.stringify(c.metrics));
    // Billed: answered → end rounded up, at 6 cents a minute (0.1 cent a second); the wallet lost exactly that.
    assert.ok(
      c.answered_at !== null && c.billed_seconds >= Math.floor(c.duration_seconds) && c.billed_seconds <= Math.ceil(c.duration_seconds) + 1,
      JSON.stringify(c),
    );
    assert.equal(c.cost_cents, (c.billed_seconds * 100_000) / 1e6);
    assert.equal(before - (await walletMicrocents(gw, acc.session)), c.billed_seconds * 100_000);
    const mine = gw.events.filter((e) => e.fields.call_id === c.id);
    assert.deepEqual(
      mine.map((e) => e.event),
      ['call.answered', 'call.action', 'call.ended'],
    );
    // The action as it was taken (the call named no endpoint for it: no status), and the end with the transcript and outcome.
    const { action, entities, status } = mine[1]!.fields as any;
    assert.deepEqual([action, entities, status], ['CREATE_DISPUTE', c.outcome.actions[0].entities, null]);
    assert.deepEqual(mine[2]!.fields, {
      call_id: c.id,
      model: 'voice-test',
      status: 'completed',
      end_reason: 'callee_hangup',
      billed_seconds: c.billed_seconds,
      cost_cents: c.cost_cents,
      outcome: c.outcome,
      transcript: c.transcript,
    });
  });

  it('runs the same flow in Hinglish text: "ATM se paise nahi nikle…" → "haan" → CREATE_DISPUTE', async () => {
    stt.say('ATM se paise nahi nikle par account se kat gaye', 'haan ji');
    const res = await dial('+919800000010');
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assert.deepEqual(
      c.transcript.map((t: { response_id?: string; text: string }) => t.response_id ?? t.text),
      ['GEN.GREETING', 'ATM se paise nahi nikle par account se kat gaye', 'BANKING.DISPUTE.ASK_RAISE', 'haan ji', 'BANKING.DISPUTE.CREATED'],
    );
    assert.deepEqual(
      c.outcome.actions.map((a: { action: string }) => a.action),
      ['CREATE_DISPUTE'],
    );
  });

  it("credit guard: a wallet that covers 10 s hears the pack's low-balance wording to its end, then insufficient_credit, billed within the hold", async () => {
    await assertCreditGuarded(gw, 'voice-test');
  });
});
