// Answering machines on the simulator's voicemail callees (issue 41 §1), over real sockets in real
// time: the gateway's own detector hears a greeting then its beep and decides `machine` within 4 s
// of the answer; the agent stops, the message is left after the beep, the call hangs up
// (`voicemail`), billed as any answered call, with `call.answered_by` among its events. A person's
// "hello?" is `human` and the call goes on; `hangup` leaves no message. The greeting's first frame
// is not later with the detector listening than without. Bad `voicemail`s are 400 naming the field.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, startTestGateway } from '../helper.ts';
import { waitFor } from '../actors/helpers.ts';
import { startReceiver } from '../webhooks/receiver.ts';
import { ended, voiceAccount, waitForCall } from './helpers.ts';
import { scriptedVoiceModel, simulatedVoice } from './simulated.ts';

const GREETING = "Hi, you've reached Priya. I can't take your call right now, please leave a message after the tone.";
const MESSAGE = 'Hello, this is your bank calling about your card. Please call us back.';
const VOICEMAIL = '+919800000060';
const PERSON = '+919800000061';

const v = simulatedVoice([
  // A voicemail: a pause, its greeting, its beep, then it records (silence) until the gateway hangs up.
  { to: VOICEMAIL, answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 400 }, { say: GREETING }, { silence_ms: 300 }, { beep_ms: 400 }] },
  // A person: "hello?", listens to the agent, hangs up.
  { to: PERSON, answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 500 }, { say: 'hello?' }, { wait_agent: 'done', ms: 300 }, { hangup: true }] },
]);

describe('voice calls: answering machines (the gateway detector, the simulator)', () => {
  it('a voicemail: machine within 4 s, the agent stops, the message is left after the beep, end voicemail, billed, call.answered_by', async () => {
    const receiver = await startReceiver();
    try {
      const hook = await call(v.gw.url, 'POST', '/portal/webhooks', { token: v.acc.session, body: { url: receiver.url, events: ['call.ended'] } });
      assert.equal(hook.status, 201, hook.text);
      const res = await v.dial(VOICEMAIL, { voicemail: { action: 'leave_message', text: MESSAGE }, webhook_id: hook.body.id });
      assert.equal(res.status, 202, res.text);
      const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 60_000);
      console.log(
        `# ${c.answered_by} (${JSON.stringify(c.answered_by_detection)}), transcript ${JSON.stringify(c.transcript.map((t: { role: string; text: string; start: number; end: number }) => [t.role, t.text.slice(0, 30), t.start, t.end]))}`,
      );
      assert.deepEqual([c.status, c.end_reason, c.answered_by], ['completed', 'voicemail', 'machine']);
      assert.equal(c.answered_by_detection.source, 'gateway');
      assert.ok(c.answered_by_detection.decision_ms <= 4000, `decided ${c.answered_by_detection.decision_ms} ms after the answer`);
      const agent = c.transcript.filter((t: { role: string }) => t.role === 'agent');
      const left = agent.at(-1);
      assert.equal(left.text, MESSAGE);
      assert.equal(left.heard_text, MESSAGE, 'the message played whole');
      assert.equal(agent[0].interrupted, true, 'the greeting was cut when the machine was known');
      // The beep ends after the greeting's speech (the callee's turn) + 300 ms + 400 ms; the message after it.
      const greeting = c.transcript.find((t: { role: string }) => t.role === 'callee');
      if (greeting) assert.ok(left.start >= greeting.end + 0.6, `message at ${left.start} s, greeting's voice ended ${greeting.end} s`);
      assert.ok(c.billed_seconds >= Math.ceil(left.end) && c.billed_seconds <= Math.ceil(left.end) + 2, `billed ${c.billed_seconds} s`);
      assert.equal(c.cost_cents, c.billed_seconds / 10);
      await waitFor('call.answered_by and call.ended', () => receiver.received.filter((r) => r.json.call_id === c.id).length >= 3);
      const events = receiver.received.filter((r) => r.json.call_id === c.id);
      assert.deepEqual(
        events.map((r) => r.json.event),
        ['call.answered', 'call.answered_by', 'call.ended'],
      );
      assert.deepEqual([events[1]!.json.answered_by, events[1]!.json.decision_ms], ['machine', c.answered_by_detection.decision_ms]);
    } finally {
      await receiver.close();
    }
  });

  it("a person's hello? is human: the call goes on; the greeting's first frame is no later with the detector than without", async () => {
    // A first call renders the greeting (kept): then the two are placed together, each with it in hand.
    await waitForCall(v.gw, v.acc.key, (await v.dial(PERSON)).body.id, ended, 60_000);
    const [withDetector, without] = await Promise.all([v.dial(PERSON, { voicemail: { action: 'hangup' } }), v.dial(PERSON)]);
    const [a, b] = await Promise.all([withDetector, without].map((r) => waitForCall(v.gw, v.acc.key, r.body.id, ended, 60_000)));
    console.log(`# answer → first frame: ${a.metrics.answer_to_first_frame_ms} ms with the detector, ${b.metrics.answer_to_first_frame_ms} ms without`);
    assert.deepEqual([a.answered_by, a.answered_by_detection.detail, a.end_reason], ['human', 'short_greeting', 'callee_hangup']);
    assert.ok(a.answered_by_detection.decision_ms <= 4000);
    assert.deepEqual([b.answered_by, b.answered_by_detection], [null, null], 'a call without voicemail detects nothing');
    assert.ok(
      a.transcript.some((t: { role: string }) => t.role === 'agent'),
      'the agent spoke on',
    );
    assert.ok(a.metrics.answer_to_first_frame_ms <= b.metrics.answer_to_first_frame_ms + 100, 'the detector does not hold the greeting back');
  });

  it('continue: a machine is told (answered_by, the event), and the call goes on until the client ends it', async () => {
    const res = await v.dial(VOICEMAIL, { voicemail: { action: 'continue' } });
    const live = await waitForCall(v.gw, v.acc.key, res.body.id, (c) => c.answered_by !== null, 20_000);
    assert.deepEqual([live.answered_by, live.status], ['machine', 'in_progress']);
    await new Promise((r) => setTimeout(r, 1500));
    const hung = await call(v.gw.url, 'POST', `/v1/voice/calls/${res.body.id}/hangup`, { token: v.acc.key });
    assert.equal(hung.status, 200, 'still in progress: the machine did not end it');
    const c = await waitForCall(v.gw, v.acc.key, res.body.id, ended, 20_000);
    assert.equal(c.end_reason, 'api_hangup');
  });

  it("hangup: a machine is hung up on with no message; a message may be the pack's response", async () => {
    const [hungUp, pack] = await Promise.all([
      v.dial(VOICEMAIL, { voicemail: { action: 'hangup' } }),
      v.dial(VOICEMAIL, { voicemail: { action: 'leave_message', response_id: 'GEN.GOODBYE' } }),
    ]);
    const c = await waitForCall(v.gw, v.acc.key, hungUp.body.id, ended, 60_000);
    assert.deepEqual([c.end_reason, c.answered_by], ['voicemail', 'machine']);
    assert.ok(c.transcript.every((t: { text: string }) => t.text !== MESSAGE));
    assert.ok(c.duration_seconds <= 5, `${c.duration_seconds} s`);
    const p = await waitForCall(v.gw, v.acc.key, pack.body.id, ended, 60_000);
    assert.deepEqual([p.end_reason, p.transcript.at(-1).text, p.transcript.at(-1).response_id], ['voicemail', 'Goodbye, have a nice day.', 'GEN.GOODBYE']);
  });

  it('a bad voicemail is 400 naming its field; a model may give the default', async () => {
    const bad = async (voicemail: unknown, param: string, body: Record<string, unknown> = {}) => {
      const res = await v.dial('+919800000012', { voicemail, ...body });
      assert.deepEqual([res.status, res.body.error?.code, res.body.error?.param], [400, 'invalid_request', param], res.text);
      return res.body.error.message as string;
    };
    assert.match(await bad({ action: 'leave_message' }, 'voicemail.text'), /either 'text' or 'response_id'/);
    await bad({ action: 'leave_message', text: 'hi', response_id: 'GEN.GREETING' }, 'voicemail.response_id');
    await bad({ action: 'hangup', text: 'hi' }, 'voicemail.text');
    assert.match(await bad({ action: 'leave_message', response_id: 'NO.SUCH' }, 'voicemail.response_id'), /no response 'NO.SUCH'/);
    await bad({ action: 'leave_message', response_id: 'GEN.GREETING' }, 'voicemail.response_id', {
      agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'Be brief.' },
    });
    for (const wrong of [{ action: 'shout' }, { action: 'hangup', beep: true }, 'hangup']) {
      const res = await v.dial('+919800000012', { voicemail: wrong });
      assert.equal(res.status, 400, res.text);
    }
    const def = scriptedVoiceModel([{ provider: 'simulator' }]);
    const put = (body: unknown) => call(v.gw.url, 'PUT', '/admin/models/voice-test-vm', { token: ADMIN_TOKEN, body });
    const refused = await put({ ...def, voicemail: { action: 'leave_message' } });
    assert.deepEqual([refused.status, refused.body.error?.param], [400, 'voicemail.text'], refused.text);
    assert.equal((await put({ ...def, voicemail: { action: 'hangup' } })).status, 201);
    const who = await voiceAccount(v.gw, 1000);
    const res = await call(v.gw.url, 'POST', '/v1/voice/call', { token: who.key, body: { model: 'voice-test-vm', to: VOICEMAIL } });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(v.gw, who.key, res.body.id, ended, 60_000);
    assert.deepEqual([c.end_reason, c.answered_by], ['voicemail', 'machine'], "the model's default");
  });

  it("the README's voicemail callee (+919800000007, the default config's) through voice-local", async () => {
    const gw = await startTestGateway();
    try {
      const who = await voiceAccount(gw);
      const body = { model: 'voice-local', to: '+919800000007', voicemail: { action: 'leave_message', text: MESSAGE } };
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: who.key, body });
      assert.equal(placed.status, 202, placed.text);
      const c = await waitForCall(gw, who.key, placed.body.id as string, ended, 60_000);
      assert.deepEqual([c.end_reason, c.answered_by], ['voicemail', 'machine'], JSON.stringify(c.transcript));
      assert.equal(c.transcript.filter((t: { role: string }) => t.role === 'agent').at(-1).text, MESSAGE);
    } finally {
      await gw.destroy();
    }
  });
});
