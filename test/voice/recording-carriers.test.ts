// Recorded calls through the fake carriers (test/fakes/twilio.ts, test/fakes/exotel.ts) over real
// loopback sockets, each on a bad day: Twilio's answer callback lost (the stream's start answers the
// call), Exotel's 4 s late and sent three times. Twilio's stream is μ-law in 20 ms frames, Exotel's
// PCM16 in 100 ms chunks in and 200 ms messages out, paced in real time by the fakes' callees; either
// way the recording holds the callee on channel 0 and the agent on channel 1, where the transcript
// says each spoke, the call's length long.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { type CarrierRig, carrierRig } from './carrier-rig.ts';
import { ended, place, waitForCall } from './helpers.ts';
import { CALLEES } from './simulated.ts';
import { assertSidesApart, fetchRecording, parseWav } from './recording-checks.ts';

const DISPUTE = '+919800000010';

describe('recorded calls through the (fake) carriers', () => {
  let rig: CarrierRig;
  before(async () => {
    rig = await carrierRig(CALLEES as never);
    rig.twilio.badDays.set(DISPUTE, { dropAnswered: true });
    rig.exotel.badDays.set(DISPUTE, { answeredDelayMs: 4000, repeat: 3 });
  });
  after(() => rig?.close());

  for (const model of ['voice-twilio', 'voice-exotel']) {
    it(`${model}: both sides in their channels, the call's length`, async () => {
      const { gw, acc } = rig;
      rig.stt.say('the ATM did not give money but my account got debited', 'yes please');
      const placed = await place(gw, acc.key, { model, to: DISPUTE, record: true });
      assert.equal(placed.status, 202, placed.text);
      const c = await waitForCall(gw, acc.key, placed.body.id, (x) => ended(x) && x.recording?.status !== 'recording', 45_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
      assert.equal(c.recording.available, true);
      const got = await fetchRecording(gw.url, acc.key, c.id);
      assert.equal(got.status, 200);
      const wav = parseWav(got.bytes);
      assert.ok(Math.abs(wav.seconds - c.duration_seconds) < 1.5, `recorded ${wav.seconds} s of a ${c.duration_seconds} s call`);
      assertSidesApart(wav, c.transcript);
    });
  }
});
