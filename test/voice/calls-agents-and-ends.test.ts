// Outbound calls end to end through the simulator carrier, over real loopback sockets: the simulated
// callee answers (or not) after its script's delay, opens the media stream to the gateway and speaks
// Twilio's Media Streams protocol; its speech is espeak-ng's (tts-local), heard by the gateway's VAD
// and recognised by a scripted stt upstream (an OpenAI-compatible fake: pocketsphinx on 8 kHz
// μ-law is too unreliable for exact assertions), understood by the demo intent pack, answered with
// pre-rendered tts-local audio. What is asserted is what a client reads back: statuses, end reasons,
// the transcript with what was heard, the outcome, the charge in the wallet, the webhook events.
// The LLM and hybrid agents, barge-in, concurrent calls, and every way a call ends (busy, failed, no
// answer, canceled, the agent's or the API's hang-up, no carrier). The intent agent's flows are
// calls.test.ts's, what the call API refuses and limits calls-api.test.ts's: three files so their
// calls run side by side.
/** Thanks the agent after its greeting, then stays on the line: the pack's CLOSE must end the call. */
const THANKFUL = { to: '+919800000014', answer: 'answer' as const, ring_ms: 100, steps: [{ wait_agent: 'done' as const, ms: 200 }, { say: 'thank you' }] };
/** Says two things the demo pack cannot help with, listening to each answer; stays on the line. */
const OFF_TOPIC = {
  to: '+919800000016',
  answer: 'answer' as const,
  ring_ms: 100,
  steps: [
    { wait_agent: 'done' as const, ms: 600 },
    { say: 'what is the weather like today' },
    { wait_agent: 'done' as const, ms: 1500 },
    { say: 'no I want to know the weather tomorrow' },
  ],
};
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, type TestGateway } from '../helper.ts';
import { assertBargedIn, ended, voiceAccount, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';
import { putScriptedVoice, simulatedVoice, type ScriptedStt, type SimulatedVoice } from './simulated.ts';

describe('voice calls through the simulator: other agents, barge-in, ends', () => {
  const v = simulatedVoice([THANKFUL, OFF_TOPIC]);
  let gw: TestGateway;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  let llm: SimulatedVoice['llm'];
  before(() => {
    ({ gw, stt, acc, llm } = v);
  });
  const dial = (...args: Parameters<SimulatedVoice['dial']>) => v.dial(...args);

  it('hybrid agent: the LLM answers only the turn the pack cannot classify, with the system prompt and the conversation', async () => {
    stt.say('what is the weather like today');
    llm.next({ reply: 'I can only help with your bank account, sorry.' });
    const res = await dial('+919800000013', {
      agent: { type: 'hybrid', intent_model: 'intent-demo', llm_model: 'chat-test', system_prompt: 'You are the bank. Be brief.' },
    });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 40_000);
    assert.deepEqual(
      c.transcript.map((t: { response_id?: string; text: string }) => t.response_id ?? t.text),
      ['GEN.GREETING', 'what is the weather like today', 'I can only help with your bank account, sorry.'],
    );
    const sent = llm.calls('/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: string }[] };
    assert.deepEqual(
      sent.messages.map((m) => m.role),
      ['system', 'user'],
    );
    assert.equal(sent.messages[0]!.content, 'You are the bank. Be brief.');
    assert.equal(sent.messages[1]!.content, 'what is the weather like today');
  });

  it('llm agent: opens with first_message.text and answers every turn with the LLM; the variables are filled into both the first message and the system prompt', async () => {
    stt.say('what is the weather like today');
    llm.next({ reply: 'Sunny, I am told.' });
    const res = await dial('+919800000013', {
      agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief. You call for {{ bank }}. The customer is {{name}}; {{unknown}} stays.' },
      first_message: { text: 'Hello {{name}}, this is your bank.' },
      variables: { name: 'Asha', bank: 'Demo Bank' },
    });
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 40_000);
    assert.deepEqual(
      c.transcript.map((t: { text: string }) => t.text),
      ['Hello Asha, this is your bank.', 'what is the weather like today', 'Sunny, I am told.'],
    );
    const sent = llm.calls('/v1/chat/completions').at(-1)!.body as { messages: { role: string; content: string }[] };
    assert.deepEqual(
      sent.messages.map((m) => [m.role, m.content]),
      [
        ['system', 'Be brief. You call for Demo Bank. The customer is Asha; {{unknown}} stays.'],
        ['assistant', 'Hello Asha, this is your bank.'],
        ['user', 'what is the weather like today'],
      ],
    );
    const bad = await dial('+919800000013', { agent: { type: 'llm', llm_model: 'intent-demo', system_prompt: 'x' } });
    assert.deepEqual([bad.status, bad.body.error.param], [400, 'agent.llm_model']);
  });

  it('barge-in: the callee speaks over the greeting; the carrier is told to clear, heard_text is what played', async () => {
    stt.say('wait I have a question about my card');
    const res = await dial('+919800000011');
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 60_000);
    assertBargedIn(c);
  });

  it('runs concurrent calls side by side, each with its own media, transcript and charge', async () => {
    const who = await voiceAccount(gw, 1000);
    const before = await walletMicrocents(gw, who.session);
    const placed = await Promise.all([0, 1, 2].map(() => dial('+919800000012', {}, who)));
    assert.deepEqual(
      placed.map((p) => p.status),
      [202, 202, 202],
    );
    const calls = await Promise.all(placed.map((p) => waitForCall(gw, who.key, p.body.id, ended, 40_000)));
    for (const c of calls) {
      assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
      assert.deepEqual(
        c.transcript.map((t: { response_id?: string }) => t.response_id),
        ['GEN.GREETING'],
      );
      assert.equal(c.transcript[0].interrupted, false);
    }
    const billed = calls.reduce((n, c) => n + c.billed_seconds, 0);
    assert.equal(before - (await walletMicrocents(gw, who.session)), billed * 100_000);
  });

  it('ends busy, failed and no_answer (ring timeout) free; cancels a ringing call free', async () => {
    const before = await walletMicrocents(gw, acc.session);
    const busy = await dial('+919800000002');
    const failed = await dial('+919800000005');
    const silent = await dial('+919800000003', { ring_timeout_seconds: 5 });
    const b = await waitForCall(gw, acc.key, busy.body.id, ended);
    const f = await waitForCall(gw, acc.key, failed.body.id, ended);
    const n = await waitForCall(gw, acc.key, silent.body.id, ended);
    assert.deepEqual([b.status, b.end_reason, b.billed_seconds, b.cost_cents, b.answered_at], ['busy', 'dial_busy', 0, 0, null]);
    assert.deepEqual([f.status, f.end_reason, f.billed_seconds], ['failed', 'dial_failed', 0]);
    assert.deepEqual([n.status, n.end_reason, n.billed_seconds, n.ringing_at !== null], ['no_answer', 'ring_timeout', 0, true]);

    const ringing = await dial('+919800000003');
    await waitForCall(gw, acc.key, ringing.body.id, (x) => x.status === 'ringing');
    const hang = await call(gw.url, 'POST', `/v1/voice/calls/${ringing.body.id}/hangup`, { token: acc.key });
    assert.deepEqual([hang.status, hang.body.error.code], [409, 'call_not_active']);
    const cancel = await call(gw.url, 'POST', `/v1/voice/calls/${ringing.body.id}/cancel`, { token: acc.key });
    assert.equal(cancel.status, 200, cancel.text);
    const x = await waitForCall(gw, acc.key, ringing.body.id, ended);
    assert.deepEqual([x.status, x.end_reason, x.billed_seconds], ['canceled', 'api_hangup', 0]);
    assert.equal(await walletMicrocents(gw, acc.session), before, 'unanswered calls cost nothing');
  });

  it("the pack's CLOSE plays its reply to the end, then the agent hangs up: agent_hangup, billed", async () => {
    stt.say('thank you so much');
    const res = await dial(THANKFUL.to);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 30_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'agent_hangup'], JSON.stringify(c));
    const last = c.transcript.at(-1);
    assert.deepEqual([last.role, last.response_id, last.heard_text === last.text], ['agent', 'GEN.THANKS', true], JSON.stringify(last));
    assert.ok(c.billed_seconds > 0 && c.cost_cents === (c.billed_seconds * 100_000) / 1e6, JSON.stringify(c));
  });

  it("an out-of-scope turn (a misheard sentence reads as one) gets the pack's question back; the second in a row closes: agent_hangup", async () => {
    stt.say('what is the weather like today', 'no I want to know the weather tomorrow');
    const res = await dial(OFF_TOPIC.to);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 40_000);
    assert.deepEqual(
      c.transcript.map((t: { response_id?: string; text: string }) => t.response_id ?? t.text),
      ['GEN.GREETING', 'what is the weather like today', 'GEN.OUT_OF_SCOPE', 'no I want to know the weather tomorrow', 'GEN.OUT_OF_SCOPE_CLOSE'],
      JSON.stringify(c.transcript),
    );
    assert.deepEqual([c.status, c.end_reason, c.outcome.final_state], ['completed', 'agent_hangup', 'OUT_OF_SCOPE'], JSON.stringify(c));
  });

  it('a model whose every carrier route refuses the call ends it failed / carrier_unavailable, free', async () => {
    // A twilio route whose API is a closed port: the dial is refused, and there is no other route.
    await putScriptedVoice(gw.url, stt, 'voice-down', [
      { provider: 'twilio', base_url: 'http://127.0.0.1:9', account_sid: 'AC0123', api_key: 'token', from: '+919800000098' },
    ]);
    const before = await walletMicrocents(gw, acc.session);
    const res = await dial('+919800000012', { model: 'voice-down' });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended);
    assert.deepEqual([c.status, c.end_reason, c.billed_seconds, c.answered_at], ['failed', 'carrier_unavailable', 0, null]);
    assert.equal(await walletMicrocents(gw, acc.session), before);
  });

  it('hangs up a call in progress (api_hangup, billed); a second hang-up or a cancel is 409 call_not_active', async () => {
    const res = await dial('+919800000099');
    await waitForCall(gw, acc.key, res.body.id, (x) => x.status === 'in_progress');
    await new Promise((r) => setTimeout(r, 1200));
    const hang = await call(gw.url, 'POST', `/v1/voice/calls/${res.body.id}/hangup`, { token: acc.key });
    assert.equal(hang.status, 200, hang.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'api_hangup']);
    assert.ok(c.billed_seconds >= 1 && c.billed_seconds <= 3, String(c.billed_seconds));
    for (const what of ['hangup', 'cancel']) {
      const again = await call(gw.url, 'POST', `/v1/voice/calls/${res.body.id}/${what}`, { token: acc.key });
      assert.deepEqual([again.status, again.body.error.code], [409, 'call_not_active']);
    }
  });
});
