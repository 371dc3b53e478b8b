// Answering machines on real carriers' wire formats (issue 41 §1), over real loopback sockets:
// - Twilio: the dial asks Twilio's asynchronous AMD (MachineDetection=DetectMessageEnd, AsyncAmd,
//   AsyncAmdStatusCallback, only when the call has a `voicemail`), and its signed AnsweredBy callback
//   decides: `machine_end_beep` (the greeting over) leaves the message at once, `human` lets the call
//   go on. The gateway's detector listens beside it (test/voice/voicemail-twilio.test.ts): its beep,
//   heard before a callback that comes late (and twice: changing nothing) or never, leaves the message;
// - Exotel: the gateway's own detector on Exotel's Voicebot stream (PCM16, 100 ms chunks).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type CarrierRig, carrierRig } from './carrier-rig.ts';

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
  let rig: CarrierRig;
  before(async () => {
    rig = await carrierRig(CALLEES);
  });
  after(() => rig?.close());
  const dialled = (model: string, to: string, body: Record<string, unknown> = {}) => rig.dialled(model, to, body);

  it("Twilio: async AMD asked; the gateway's beep before machine_end_beep (late, twice) leaves the message after the beep, once; human goes on; no voicemail asks nothing", async () => {
    rig.twilio.amdDays.set(VOICEMAIL, { delayMs: 700, repeat: 2 });
    const [vm, person, plain] = await Promise.all([
      dialled('voice-twilio', VOICEMAIL, LEAVE),
      dialled('voice-twilio', PERSON, LEAVE),
      dialled('voice-twilio', PERSON),
    ]);
    const dial = (to: string, n = 0) => rig.twilio.requests.filter((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === to)[n]!.form;
    const asked = dial(VOICEMAIL);
    assert.deepEqual([asked.get('MachineDetection'), asked.get('AsyncAmd'), asked.get('AsyncAmdStatusCallbackMethod')], ['DetectMessageEnd', 'true', 'POST']);
    assert.equal(asked.get('AsyncAmdStatusCallback'), asked.get('StatusCallback'), 'signed and read as the status callbacks are');
    const plainDial = rig.twilio.requests
      .filter((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === PERSON)
      .find((r) => !r.form.has('MachineDetection'));
    assert.ok(plainDial, "a call without voicemail does not ask Twilio's AMD (Twilio bills it)");

    assert.deepEqual(
      [vm.end_reason, vm.answered_by, vm.answered_by_detection.source, vm.answered_by_detection.detail],
      ['voicemail', 'machine', 'gateway', 'beep'],
      "Twilio's callback 700 ms after the beep: the gateway's beep came first",
    );
    const sid = rig.twilio.sidOf(vm.id)!;
    assert.deepEqual(
      rig.twilio.amdCallbacks.filter((c) => c.sid === sid).map((c) => [c.answeredBy, c.code]),
      [
        ['machine_end_beep', 200],
        ['machine_end_beep', 200],
      ],
    );
    const messages = vm.transcript.filter((t: { text: string }) => t.text === MESSAGE);
    assert.equal(messages.length, 1, 'the repeated callback left the message once');
    const line = rig.twilio.lines.get(vm.id)!;
    const beepEnd = line.said[1]!;
    const after = line.media.filter((at) => at > beepEnd);
    assert.ok(after.length * 20 >= 1500, `the message's frames came after the beep: ${after.length}`);
    assert.equal(vm.cost_cents, vm.billed_seconds / 10);

    assert.deepEqual([person.answered_by, person.end_reason], ['human', 'callee_hangup']);
    assert.deepEqual([plain.answered_by, plain.end_reason], [null, 'callee_hangup']);
  });

  it("Twilio: AMD's callback lost: the gateway's detector hears the greeting and its beep, and leaves the message", async () => {
    rig.twilio.amdDays.set(LOST, { drop: true });
    const c = await dialled('voice-twilio', LOST, LEAVE);
    assert.deepEqual(
      [c.answered_by, c.answered_by_detection?.source, c.answered_by_detection?.detail, c.end_reason],
      ['machine', 'gateway', 'beep', 'voicemail'],
    );
    assert.equal(c.transcript.filter((t: { text: string }) => t.text === MESSAGE).length, 1);
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
