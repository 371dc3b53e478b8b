// Recorded calls through the fake carriers (test/fakes/twilio.ts, test/fakes/exotel.ts) over real
// loopback sockets, each on a bad day: Twilio's answer callback lost (the stream's start answers the
// call), Exotel's 4 s late and sent three times. Twilio's stream is μ-law in 20 ms frames, Exotel's
// PCM16 in 100 ms chunks in and 200 ms messages out, paced in real time by the fakes' callees; either
// way the recording holds the callee on channel 0 and the agent on channel 1, where the transcript
// says each spoke, the call's length long. Exotel through a flow whose Voicebot applet asks for a
// 16 kHz stream too: both sides brought to the recording's 8 kHz by SpeexDSP's resampler.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type CarrierRig, carrierRig } from './carrier-rig.ts';
import { ended, place, waitForCall } from './helpers.ts';
import { putScriptedVoice } from './simulated.ts';
import { assertSidesApart, fetchRecording, parseWav } from './recording-checks.ts';

/**
 * The greeting, the callee's complaint, the agent's question, and the callee hangs up: both sides
 * speak, apart and in turn (the demo's whole dispute, two turns more, took ~10 s longer a call and
 * proved nothing more about the recording).
 */
const CALLER = '+919800000015';
const FLOW = '4242';
const CALLEES = [
  {
    to: CALLER,
    answer: 'answer' as const,
    ring_ms: 200,
    steps: [
      { wait_agent: 'done' as const, ms: 200 },
      { say: 'the ATM did not give money but my account got debited' },
      { wait_agent: 'done' as const, ms: 200 },
      { hangup: true as const },
    ],
  },
];

describe('recorded calls through the (fake) carriers', () => {
  let rig: CarrierRig;
  before(async () => {
    rig = await carrierRig(CALLEES);
    rig.twilio.badDays.set(CALLER, { dropAnswered: true });
    rig.exotel.badDays.set(CALLER, { answeredDelayMs: 4000, repeat: 3 });
    rig.exotel.flows.set(FLOW, `${rig.gw.url}/v1/voice/exotel/voicebot?sample-rate=16000`);
    await putScriptedVoice(rig.gw.url, rig.stt, 'voice-exotel-16k', [{ ...rig.routes.exotel, app_id: FLOW }]);
  });
  after(() => rig?.close());

  for (const model of ['voice-twilio', 'voice-exotel', 'voice-exotel-16k']) {
    it(`${model}: both sides in their channels, the call's length`, async () => {
      const { gw, acc } = rig;
      rig.stt.say('the ATM did not give money but my account got debited');
      const placed = await place(gw, acc.key, { model, to: CALLER, record: true });
      assert.equal(placed.status, 202, placed.text);
      const c = await waitForCall(gw, acc.key, placed.body.id, (x) => ended(x) && x.recording?.status !== 'recording', 45_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
      assert.deepEqual(
        c.transcript.map((t: { role: string }) => t.role),
        ['agent', 'callee', 'agent'],
        JSON.stringify(c.transcript),
      );
      assert.equal(c.recording.available, true);
      const got = await fetchRecording(gw.url, acc.key, c.id);
      assert.equal(got.status, 200);
      const wav = parseWav(got.bytes);
      assert.ok(Math.abs(wav.seconds - c.duration_seconds) < 1.5, `recorded ${wav.seconds} s of a ${c.duration_seconds} s call`);
      assertSidesApart(wav, c.transcript);
      if (model !== 'voice-exotel-16k') return;
      // The agent's audio went out at 16 kHz (32 bytes a ms), and its recording is at 8 kHz all the same.
      const agentMs = c.transcript
        .filter((t: { role: string }) => t.role === 'agent')
        .reduce((ms: number, t: { start: number; end: number }) => ms + (t.end - t.start) * 1000, 0);
      const sent = rig.exotel.streams.get(c.id)!.media.reduce((a, b) => a + b, 0);
      assert.ok(sent >= agentMs * 32 * 0.9, `${sent} bytes sent for ${Math.round(agentMs)} ms of the agent: a 16 kHz stream`);
    });
  }
});
