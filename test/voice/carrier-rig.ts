// A gateway with both fake carriers (test/fakes/twilio.ts, test/fakes/exotel.ts) whose callees follow
// `callees` and speak with the gateway's own tts-local, the scripted recogniser, the voice models
// `voice-twilio` and `voice-exotel` on them, and a funded account: the set-up of the test files that
// place the same callees through both carriers (real-lines, line-noise, voicemail-carriers,
// recording-carriers, voicemail-twilio).
//
// A callee's speech is made once per text and voice for the whole file (a SpeechClip is immutable):
// the same sentence said on every call and both carriers is one tts-local request, not one a call.
// It is paid by an account of its own, so the calls' wallet holds only what the calls cost.
import assert from 'node:assert/strict';
import type { SpeechClip } from '../../src/speech/clip.ts';
import type { CalleeScript } from '../../src/config.ts';
import type { TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { ended, localSpeech, place, startVoiceGateway, ttsPcm, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { putScriptedVoice, ScriptedStt } from './simulated.ts';

export interface CarrierRig {
  gw: TestGateway;
  twilio: FakeTwilio;
  exotel: FakeExotel;
  stt: ScriptedStt;
  acc: VoiceAccount;
  /** The routes of `voice-twilio` and `voice-exotel`, for a test's own models on the same carriers. */
  routes: { twilio: Record<string, unknown>; exotel: Record<string, unknown> };
  /** Places a call on `model` and waits for its end (and its cost). */
  dialled(model: string, to: string, body?: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
}

export interface CarrierRigOptions {
  /**
   * What a callee's `say` sounds like, given tts-local's speech (8 kHz PCM16) of a text in the
   * callee's voice: all of it when absent. Asked once per `say` and voice.
   */
  clip?: (say: string, speech: (input: string) => Promise<Buffer>) => Promise<SpeechClip>;
  /** The fake carriers' `onReply`: how long after a callee's speech the agent's audio came. */
  onReply?: (callSid: string, delayMs: number) => void;
}

export async function carrierRig(callees: CalleeScript[], opts: CarrierRigOptions = {}): Promise<CarrierRig> {
  let gw!: TestGateway;
  let speaker!: VoiceAccount;
  const stt = await ScriptedStt.start();
  const clips = new Map<string, Promise<SpeechClip>>();
  const render = (say: string, voice: string) =>
    opts.clip ? opts.clip(say, (input) => ttsPcm(gw, speaker.key, input, voice)) : localSpeech(gw.url, speaker.key, say, voice);
  const speak = (say: string, voice: string) => {
    const key = `${voice}\n${say}`;
    let clip = clips.get(key);
    if (!clip) {
      clip = render(say, voice);
      clips.set(key, clip);
      clip.catch(() => clips.delete(key)); // a failed one is asked again
    }
    return clip;
  };
  const { onReply } = opts;
  const twilio = await FakeTwilio.start({ accountSid: 'ACtest', authToken: 'twilio-auth-token', callees, speak, ...(onReply ? { onReply } : {}) });
  const exotel = await FakeExotel.start({ accountSid: 'acme1', apiKey: 'exo-key', apiToken: 'exo-token', callees, speak, ...(onReply ? { onReply } : {}) });
  gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, simulator: { callees: [] } } });
  const twilioRoute = { provider: 'twilio', base_url: twilio.url, account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' };
  await putScriptedVoice(gw.url, stt, 'voice-twilio', [twilioRoute]);
  const exotelRoute = { provider: 'exotel', base_url: exotel.url, account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
  await putScriptedVoice(gw.url, stt, 'voice-exotel', [exotelRoute]);
  const acc = await voiceAccount(gw, 1000);
  speaker = await voiceAccount(gw, 1000);
  return {
    gw,
    twilio,
    exotel,
    stt,
    acc,
    routes: { twilio: twilioRoute, exotel: exotelRoute },
    async dialled(model, to, body = {}) {
      const res = await place(gw, acc.key, { model, to, ...body });
      assert.equal(res.status, 202, res.text);
      return waitForCall(gw, acc.key, res.body.id as string, ended, 60_000);
    },
    async close() {
      await gw.destroy();
      await twilio.close();
      await exotel.close();
      await stt.server.close();
    },
  };
}
