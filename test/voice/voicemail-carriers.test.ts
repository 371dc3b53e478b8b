// Answering machines on real carriers' wire formats (issue 41 §1), over real loopback sockets:
// - Twilio: the dial asks Twilio's asynchronous AMD (MachineDetection=DetectMessageEnd, AsyncAmd,
//   AsyncAmdStatusCallback, only when the call has a `voicemail`), and its signed AnsweredBy callback
//   decides: `machine_end_beep` (the greeting over) leaves the message at once, `human` lets the call
//   go on. The callback on a bad day: late and twice (the first counts, once), or lost (the call goes
//   on, `answered_by` null);
// - Exotel: the gateway's own detector on Exotel's Voicebot stream (PCM16, 100 ms chunks).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { ended, localSpeech, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { putScriptedVoice, ScriptedStt } from './simulated.ts';

const GREETING = 'Hello, this is Dan Miller. Sorry I missed you. Leave your name and number and I will get back to you.';
const MESSAGE = 'Hello, this is your bank. Please call us back.';
const VOICEMAIL = '+919800000070';
const PERSON = '+919800000071';
const LOST = '+919800000072';
const machine = (to: string) => ({
  to,
  answer: 'answer' as const,
  ring_ms: 100,
  steps: [{ silence_ms: 300 }, { say: GREETING }, { silence_ms: 300 }, { beep_ms: 400 }, { silence_ms: 8000 }, { hangup: true as const }],
});
const CALLEES = [
  machine(VOICEMAIL),
  machine(LOST),
  {
    to: PERSON,
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ silence_ms: 500 }, { say: 'yes, speaking' }, { wait_agent: 'done' as const, ms: 300 }, { hangup: true as const }],
  },
];
const LEAVE = { voicemail: { action: 'leave_message', text: MESSAGE } };

describe('answering machines on Twilio (its async AMD) and Exotel (the gateway detector)', () => {
  let gw: TestGateway;
  let twilio: FakeTwilio;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  before(async () => {
    stt = await ScriptedStt.start();
    const speak = async (input: string, voice: string) => localSpeech(gw.url, acc.key, input, voice);
    twilio = await FakeTwilio.start({ accountSid: 'ACtest', authToken: 'twilio-auth-token', callees: CALLEES, speak });
    exotel = await FakeExotel.start({ accountSid: 'acme1', apiKey: 'exo-key', apiToken: 'exo-token', callees: CALLEES, speak });
    gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, simulator: { callees: [] } } });
    await putScriptedVoice(gw.url, stt, 'voice-twilio', [
      { provider: 'twilio', base_url: twilio.url, account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' },
    ]);
    const exo = { provider: 'exotel', base_url: exotel.url, account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
    await putScriptedVoice(gw.url, stt, 'voice-exotel', [exo]);
    acc = await voiceAccount(gw, 1000);
  });
  after(async () => {
    await gw?.destroy();
    await twilio?.close();
    await exotel?.close();
    await stt?.server.close();
  });

  const dialled = async (model: string, to: string, body: Record<string, unknown> = {}) => {
    const res = await place(gw, acc.key, { model, to, ...body });
    assert.equal(res.status, 202, res.text);
    return waitForCall(gw, acc.key, res.body.id, ended, 60_000);
  };

  it('Twilio: async AMD asked; machine_end_beep (late, twice) leaves the message after the beep, once; human goes on; no voicemail asks nothing', async () => {
    twilio.amdDays.set(VOICEMAIL, { delayMs: 700, repeat: 2 });
    const [vm, person, plain] = await Promise.all([
      dialled('voice-twilio', VOICEMAIL, LEAVE),
      dialled('voice-twilio', PERSON, LEAVE),
      dialled('voice-twilio', PERSON),
    ]);
    const dial = (to: string, n = 0) => twilio.requests.filter((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === to)[n]!.form;
    const asked = dial(VOICEMAIL);
    assert.deepEqual([asked.get('MachineDetection'), asked.get('AsyncAmd'), asked.get('AsyncAmdStatusCallbackMethod')], ['DetectMessageEnd', 'true', 'POST']);
    assert.equal(asked.get('AsyncAmdStatusCallback'), asked.get('StatusCallback'), 'signed and read as the status callbacks are');
    const plainDial = twilio.requests.filter((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === PERSON).find((r) => !r.form.has('MachineDetection'));
    assert.ok(plainDial, "a call without voicemail does not ask Twilio's AMD (Twilio bills it)");

    assert.deepEqual(
      [vm.end_reason, vm.answered_by, vm.answered_by_detection.source, vm.answered_by_detection.detail],
      ['voicemail', 'machine', 'twilio', 'machine_end_beep'],
    );
    const sid = twilio.sidOf(vm.id)!;
    assert.deepEqual(
      twilio.amdCallbacks.filter((c) => c.sid === sid).map((c) => [c.answeredBy, c.code]),
      [
        ['machine_end_beep', 200],
        ['machine_end_beep', 200],
      ],
    );
    const messages = vm.transcript.filter((t: { text: string }) => t.text === MESSAGE);
    assert.equal(messages.length, 1, 'the repeated callback left the message once');
    const line = twilio.lines.get(vm.id)!;
    const beepEnd = line.said[1]!;
    const after = line.media.filter((at) => at > beepEnd);
    assert.ok(after.length * 20 >= 1500, `the message's frames came after the beep: ${after.length}`);
    assert.equal(vm.cost_cents, vm.billed_seconds / 10);

    assert.deepEqual([person.answered_by, person.end_reason], ['human', 'callee_hangup']);
    assert.deepEqual([plain.answered_by, plain.end_reason], [null, 'callee_hangup']);
  });

  it("Twilio: AMD's callback lost: the call goes on as a human's would, answered_by null", async () => {
    twilio.amdDays.set(LOST, { drop: true });
    const c = await dialled('voice-twilio', LOST, LEAVE);
    assert.deepEqual([c.answered_by, c.end_reason], [null, 'callee_hangup']);
    assert.ok(c.transcript.every((t: { text: string }) => t.text !== MESSAGE));
  });

  it('Exotel: the gateway detector hears the greeting on the Voicebot stream and leaves the message after the beep', async () => {
    const c = await dialled('voice-exotel', VOICEMAIL, LEAVE);
    assert.deepEqual([c.end_reason, c.answered_by, c.answered_by_detection.source], ['voicemail', 'machine', 'gateway']);
    assert.ok(c.answered_by_detection.decision_ms <= 4000, `${c.answered_by_detection.decision_ms} ms`);
    const left = c.transcript.find((t: { text: string }) => t.text === MESSAGE);
    assert.ok(left, JSON.stringify(c.transcript));
    assert.equal(left.heard_text, MESSAGE);
  });
});
