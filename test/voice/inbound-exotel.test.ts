// Inbound calls through a (fake) Exotel (test/fakes/exotel.ts `incoming`) over real loopback sockets:
// a caller rings an ExoPhone, its flow's Voicebot applet asks the gateway's URL for the stream
// (Direction=incoming, no CustomField), the gateway checks the call with Exotel's API and answers the
// call's stream, on which the caller speaks the Voicebot protocol in real time (~100 ms chunks); the
// number's agent answers it, billed to its owner. A CallSid Exotel does not know as a call to that
// number is 403, an unknown number or a refused call 404 (the flow goes on to its next applet).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { assertDisputeCall, localSpeech, startVoiceGateway, voiceAccount, walletMicrocents, type VoiceAccount } from './helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from './simulated.ts';
import type { CalleeScript } from '../../src/config.ts';

const ACCOUNT = { account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token' };
const FLOW = '4343';
const EXOPHONE = '08047491899';
const CALLER = '+919800000630';
/** The dispute call's callee, now the one calling in. */
const CALLERS = [{ ...CALLEES.find((c) => c.to === '+919800000010')!, to: CALLER, ring_ms: 100 }] as CalleeScript[];

describe('inbound calls through a (fake) Exotel flow', () => {
  let gw: TestGateway;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  let speaker: VoiceAccount;
  const applet = (q: Record<string, string>) => call(gw.url, 'GET', `/v1/voice/exotel/voicebot?${new URLSearchParams(q)}`);
  before(async () => {
    stt = await ScriptedStt.start();
    const speak = (input: string, voice: string) => localSpeech(gw.url, speaker.key, input, voice);
    exotel = await FakeExotel.start({ accountSid: ACCOUNT.account_sid, apiKey: ACCOUNT.api_key, apiToken: ACCOUNT.api_token, callees: CALLERS, speak });
    gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, minAffordableSeconds: 10, simulator: { callees: [] } } });
    exotel.flows.set(FLOW, `${gw.url}/v1/voice/exotel/voicebot`);
    await putScriptedVoice(gw.url, stt, 'voice-exotel-in', [{ provider: 'exotel', ...ACCOUNT, from: EXOPHONE, app_id: FLOW, base_url: exotel.url }]);
    acc = await voiceAccount(gw, 1000);
    speaker = await voiceAccount(gw, 100);
    // The ExoPhone as Exotel writes it; stored as its E.164 form.
    const number = { model: 'voice-exotel-in', owner: { type: 'user', id: acc.id } };
    const put = await call(gw.url, 'PUT', `/admin/voice/numbers/${EXOPHONE}`, { token: ADMIN_TOKEN, body: number });
    assert.deepEqual([put.status, put.body.number], [201, '+918047491899'], put.text);
  });
  after(async () => {
    await gw?.destroy();
    await exotel?.close();
    await stt?.server.close();
  });

  it("the flow's Voicebot applet gets the call's stream; the agent answers the caller; billed to the number's owner", async () => {
    stt.say('ATM did not give money but my account got debited', 'haan');
    const before = await walletMicrocents(gw, acc.session);
    const sid = await exotel.incoming(CALLER, EXOPHONE, FLOW);
    let id: string | undefined;
    for (let i = 0; i < 100 && !id; i++) {
      id = (await call(gw.url, 'GET', '/v1/voice/calls', { token: acc.key })).body.data[0]?.id;
      if (!id) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(id, 'the call was taken');
    const c = await assertDisputeCall(gw, acc.key, id);
    assert.deepEqual([c.direction, c.to, c.from], ['inbound', '+918047491899', CALLER]);
    assert.equal(before - (await walletMicrocents(gw, acc.session)), c.billed_seconds * 100_000);
    const details = exotel.requests.find((r) => r.method === 'GET' && r.path === `/v1/Accounts/${ACCOUNT.account_sid}/Calls/${sid}.json`);
    assert.ok(details, "the gateway checked the call with Exotel's API before taking it");
    assert.ok((exotel.streams.get('')?.media.length ?? 0) > 0, 'the agent was heard on the stream');
  });

  it('refuses an applet ask for a CallSid Exotel does not know as a call to the number (403), and an unknown number (404)', async () => {
    const count = (await call(gw.url, 'GET', '/v1/voice/calls', { token: acc.key })).body.data.length;
    const forged = await applet({ CallSid: 'f00d0000000000000000000000000000', CallFrom: CALLER, CallTo: EXOPHONE, Direction: 'incoming' });
    assert.deepEqual([forged.status, forged.body.error?.code], [403, 'permission_denied'], forged.text);
    const unknown = await applet({ CallSid: 'f00d0000000000000000000000000001', CallFrom: CALLER, CallTo: '08044556677', Direction: 'incoming' });
    assert.equal(unknown.status, 404, unknown.text);
    assert.equal((await call(gw.url, 'GET', '/v1/voice/calls', { token: acc.key })).body.data.length, count);
  });
});
