// Recorded calls through the fake carriers (test/fakes/twilio.ts, test/fakes/exotel.ts) over real
// loopback sockets, each on a bad day: Twilio's answer callback lost (the stream's start answers the
// call), Exotel's 4 s late and sent three times. Twilio's stream is μ-law in 20 ms frames, Exotel's
// PCM16 in 100 ms chunks in and 200 ms messages out, paced in real time by the fakes' callees; either
// way the recording holds the callee on channel 0 and the agent on channel 1, where the transcript
// says each spoke, the call's length long. Exotel through a flow whose Voicebot applet asks for a
// 16 kHz stream too: both sides brought to the recording's 8 kHz by SpeexDSP's resampler.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { ended, localSpeech, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from './simulated.ts';
import { assertSidesApart, fetchRecording, parseWav } from './recording-checks.ts';

const DISPUTE = '+919800000010';
const FLOW = '4242';

describe('recorded calls through the (fake) carriers', () => {
  let gw: TestGateway;
  let twilio: FakeTwilio;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  before(async () => {
    stt = await ScriptedStt.start();
    const speak = (input: string, voice: string) => localSpeech(gw.url, acc.key, input, voice);
    twilio = await FakeTwilio.start({ accountSid: 'ACrec', authToken: 'rec-auth-token', callees: CALLEES as never, speak });
    twilio.badDays.set(DISPUTE, { dropAnswered: true });
    exotel = await FakeExotel.start({ accountSid: 'acme1', apiKey: 'exo-key', apiToken: 'exo-token', callees: CALLEES as never, speak });
    exotel.badDays.set(DISPUTE, { answeredDelayMs: 4000, repeat: 3 });
    gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, simulator: { callees: [] } } });
    acc = await voiceAccount(gw);
    const twilioRoute = { provider: 'twilio', base_url: twilio.url, account_sid: 'ACrec', api_key: 'rec-auth-token', from: '+14155550100' };
    const exotelRoute = { provider: 'exotel', base_url: exotel.url, account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
    await putScriptedVoice(gw.url, stt, 'voice-twilio', [twilioRoute]);
    await putScriptedVoice(gw.url, stt, 'voice-exotel', [exotelRoute]);
    exotel.flows.set(FLOW, `${gw.url}/v1/voice/exotel/voicebot?sample-rate=16000`);
    await putScriptedVoice(gw.url, stt, 'voice-exotel-16k', [{ ...exotelRoute, app_id: FLOW }]);
  });
  after(async () => {
    await gw?.destroy();
    await twilio?.close();
    await exotel?.close();
    await stt?.server.close();
  });

  for (const model of ['voice-twilio', 'voice-exotel', 'voice-exotel-16k']) {
    it(`${model}: both sides in their channels, the call's length`, async () => {
      stt.say('the ATM did not give money but my account got debited', 'yes please');
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
      if (model !== 'voice-exotel-16k') return;
      // The agent's audio went out at 16 kHz (32 bytes a ms), and its recording is at 8 kHz all the same.
      const agentMs = c.transcript
        .filter((t: { role: string }) => t.role === 'agent')
        .reduce((ms: number, t: { start: number; end: number }) => ms + (t.end - t.start) * 1000, 0);
      const sent = exotel.streams.get(c.id)!.media.reduce((a, b) => a + b, 0);
      assert.ok(sent >= agentMs * 32 * 0.9, `${sent} bytes sent for ${Math.round(agentMs)} ms of the agent: a 16 kHz stream`);
    });
  }
});
