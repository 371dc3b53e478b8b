// Answering machines on Twilio with the gateway's detector beside Twilio's async AMD (issue 41 §1,
// what was left), and a stream that starts late (a loaded Exotel), over real loopback sockets in
// real time against the fake carriers (test/fakes/twilio.ts, test/fakes/exotel.ts; test/voice/carrier-rig.ts):
// - a voicemail greeting without a beep: Twilio tells `machine_end_silence` only at its end, but the
//   agent's long greeting stops within seconds of the machine's (the gateway's `machine`), says
//   nothing more, and the message follows Twilio's callback; `answered_by` is Twilio's;
// - a person who answers at length (the gateway hears a greeting) whom Twilio hears as `human`,
//   before or after the gateway's `machine`: Twilio's word is the call's, the agent goes on, no message;
// - an Exotel stream that starts 2.5 s after the answer: the detector hears 3.8 s of the stream from
//   its first frame, so the greeting is still a machine (before: `unknown`, and the call went on).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type CarrierRig, carrierRig } from './carrier-rig.ts';

const GREETING = 'Hello, this is Dan Miller. Sorry I missed you. Leave your name and number and I will get back to you.';
const AT_LENGTH = 'Hello, Sharma residence, Ravi speaking. Who is calling, please, and what is it about?';
const MESSAGE = 'Hello, this is your bank. Please call us back.';
const OPENING = 'Good morning! This is the assistant from your bank, calling about the card you asked us to replace last week, and a few details we need.';
const SILENT_MACHINE = '+919800000073';
const TALKER = '+919800000074';
const LATE = '+919800000075';
const EARLY_HUMAN = '+919800000077';
const CALLEES = [
  {
    to: SILENT_MACHINE,
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ silence_ms: 300 }, { say: GREETING }, { silence_ms: 9000 }, { hangup: true as const }],
  },
  {
    to: TALKER,
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ silence_ms: 300 }, { say: AT_LENGTH }, { silence_ms: 4000 }, { say: 'hello?' }, { silence_ms: 3000 }, { hangup: true as const }],
  },
  {
    // "hello?" (Twilio: human, 0.5 s after it), then a long run the gateway alone would take for a greeting.
    to: EARLY_HUMAN,
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [
      { silence_ms: 300 },
      { say: 'hello?' },
      { say: AT_LENGTH },
      { silence_ms: 4000 },
      { say: 'hello?' },
      { silence_ms: 3000 },
      { hangup: true as const },
    ],
  },
  {
    to: LATE,
    answer: 'answer' as const,
    ring_ms: 100,
    steps: [{ silence_ms: 300 }, { say: GREETING }, { silence_ms: 300 }, { beep_ms: 400 }, { silence_ms: 8000 }, { hangup: true as const }],
  },
];
const LEAVE = { voicemail: { action: 'leave_message', text: MESSAGE }, first_message: { text: OPENING, mode: 'agent_first' } };

describe('answering machines: the gateway detector beside Twilio AMD; a late stream', () => {
  let rig: CarrierRig;
  before(async () => {
    rig = await carrierRig(CALLEES);
  });
  after(() => rig?.close());
  const dialled = (model: string, to: string, body: Record<string, unknown> = {}) => rig.dialled(model, to, body);

  it("Twilio, a greeting without a beep: the agent stops within seconds of it, the message follows Twilio's machine_end_silence", async () => {
    rig.stt.say('Hello, this is Dan Miller.', 'Sorry I missed you.', 'Leave your name and number and I will get back to you.');
    const c = await dialled('voice-twilio', SILENT_MACHINE, LEAVE);
    const agent = c.transcript.filter((t: { role: string }) => t.role === 'agent').map((t: { text: string }) => t.text);
    assert.deepEqual(agent, [OPENING, MESSAGE], 'the agent answers nothing the greeting says');
    assert.deepEqual(
      [c.end_reason, c.answered_by, c.answered_by_detection?.source, c.answered_by_detection?.detail],
      ['voicemail', 'machine', 'twilio', 'machine_end_silence'],
      JSON.stringify(c),
    );
    const line = rig.twilio.lines.get(c.id)!;
    const greetingEnd = line.said[0]!;
    // The greeting lasts about 6 s; the gateway hears a machine 2 s into it: the agent is silent by its last 2.5 s.
    const over = line.media.filter((at) => at > greetingEnd - 2500 && at <= greetingEnd);
    assert.equal(over.length, 0, `the agent's frames over the greeting's last 2.5 s: ${over.length}`);
    const opening = c.transcript.find((t: { text: string }) => t.text === OPENING);
    assert.ok(opening?.interrupted, 'the opening was cut');
    const message = c.transcript.filter((t: { text: string }) => t.text === MESSAGE);
    assert.equal(message.length, 1);
    assert.equal(message[0].heard_text, MESSAGE);
    assert.ok(line.media.filter((at) => at > greetingEnd + 1000).length * 20 >= 1500, "the message plays after Twilio's callback");
  });

  it("Twilio hears a person the gateway took for a greeting: Twilio's human is answered_by, the agent goes on, no message", async () => {
    rig.twilio.amdDays.set(TALKER, { answeredBy: 'human' });
    rig.stt.say(...Array<string>(8).fill('hello?'));
    const c = await dialled('voice-twilio', TALKER, LEAVE);
    assert.deepEqual([c.answered_by, c.answered_by_detection?.source, c.end_reason], ['human', 'twilio', 'callee_hangup'], JSON.stringify(c));
    assert.ok(c.transcript.every((t: { text: string }) => t.text !== MESSAGE));
    // The agent answers the callee's "hello?" after Twilio's word (held back before it, it would not).
    const line = rig.twilio.lines.get(c.id)!;
    assert.ok(line.media.filter((at) => at > line.said[1]!).length > 10, 'the agent answered after Twilio said human');
  });

  it("Twilio's human before the gateway hears a long run: the agent is not held back (it answers the callee's next words)", async () => {
    rig.stt.say(...Array<string>(8).fill('hello?'));
    const c = await dialled('voice-twilio', EARLY_HUMAN, LEAVE);
    assert.deepEqual([c.answered_by, c.answered_by_detection?.source, c.end_reason], ['human', 'twilio', 'callee_hangup'], JSON.stringify(c));
    const line = rig.twilio.lines.get(c.id)!;
    assert.ok(line.media.filter((at) => at > line.said[2]!).length > 10, 'the agent answered the last hello?');
  });

  it('Exotel, a stream that starts 2.5 s after the answer: the greeting is still heard as a machine, the message left after the beep', async () => {
    rig.exotel.lateStreams.set(LATE, 2500);
    const c = await dialled('voice-exotel', LATE, LEAVE);
    assert.deepEqual([c.end_reason, c.answered_by, c.answered_by_detection?.source], ['voicemail', 'machine', 'gateway'], JSON.stringify(c));
    assert.ok(c.transcript.some((t: { text: string }) => t.text === MESSAGE));
    // Counted from the answer, so it shows the stream's delay: at most the delay and 4 s.
    const ms = c.answered_by_detection.decision_ms;
    assert.ok(ms > 2500 && ms <= 2500 + 4000, `decided ${ms} ms after the answer`);
  });
});
