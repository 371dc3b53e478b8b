// A gateway with both fake carriers (test/fakes/twilio.ts, test/fakes/exotel.ts) whose callees follow
// `callees` and speak with the gateway's own tts-local, the scripted recogniser, the voice models
// `voice-twilio` and `voice-exotel` on them, and a funded account: the set-up of the test files that
// place the same callees through both carriers (voicemail-carriers.test.ts, voicemail-twilio.test.ts).
import assert from 'node:assert/strict';
import type { CalleeScript } from '../../src/config.ts';
import type { TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { ended, localSpeech, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { putScriptedVoice, ScriptedStt } from './simulated.ts';

export interface CarrierRig {
  gw: TestGateway;
  twilio: FakeTwilio;
  exotel: FakeExotel;
  stt: ScriptedStt;
  acc: VoiceAccount;
  /** Places a call on `model` and waits for its end (and its cost). */
  dialled(model: string, to: string, body?: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
}

export async function carrierRig(callees: CalleeScript[]): Promise<CarrierRig> {
  let gw!: TestGateway;
  let acc!: VoiceAccount;
  const stt = await ScriptedStt.start();
  const speak = async (input: string, voice: string) => localSpeech(gw.url, acc.key, input, voice);
  const twilio = await FakeTwilio.start({ accountSid: 'ACtest', authToken: 'twilio-auth-token', callees, speak });
  const exotel = await FakeExotel.start({ accountSid: 'acme1', apiKey: 'exo-key', apiToken: 'exo-token', callees, speak });
  gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, simulator: { callees: [] } } });
  const twilioRoute = { provider: 'twilio', base_url: twilio.url, account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' };
  await putScriptedVoice(gw.url, stt, 'voice-twilio', [twilioRoute]);
  const exotelRoute = { provider: 'exotel', base_url: exotel.url, account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
  await putScriptedVoice(gw.url, stt, 'voice-exotel', [exotelRoute]);
  acc = await voiceAccount(gw, 1000);
  return {
    gw,
    twilio,
    exotel,
    stt,
    acc,
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
