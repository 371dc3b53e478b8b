// An Exotel transfer answered after the gateway restarted (issue 41 §2's leftover), against the fake
// Exotel (test/fakes/exotel.ts) over real loopback sockets: the API transfers a call placed through
// a flow; the gateway that held it stops (a deploy, or the Connect applet's request reaching another
// instance behind the load balancer); the gateway started again on the same data answers the
// flow's Connect applet, asked as Exotel asks it, with the number. Another sid, and the same one
// once 10 minutes have passed, are 404 (the applet's fallback then applies).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { TRANSFER_TTL_MS } from '../../src/voice/handoffs.ts';
import { localSpeech, place, startVoiceGateway, transferredByApi, voiceAccount, type VoiceAccount } from './helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from './simulated.ts';

const ACCOUNT = { account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token' };
const FLOW = '4242';

describe("an Exotel transfer's Connect applet answered by the gateway restarted on the same data", () => {
  let dir: string;
  let gw: TestGateway;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  /** How far the restarted gateway's clock is ahead of the wall clock. */
  let skewMs = 0;
  const options = { voice: { mediaTimeoutMs: 10_000, minAffordableSeconds: 10, simulator: { callees: [] } } };
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-exo-handoff-'));
    stt = await ScriptedStt.start();
    const speak = (input: string, voice: string) => localSpeech(gw.url, acc.key, input, voice);
    exotel = await FakeExotel.start({
      ...{ accountSid: ACCOUNT.account_sid, apiKey: ACCOUNT.api_key, apiToken: ACCOUNT.api_token },
      callees: CALLEES as never,
      speak,
    });
    gw = await startVoiceGateway([], options, dir);
    exotel.flows.set(FLOW, `${gw.url}/v1/voice/exotel/voicebot`);
    await putScriptedVoice(gw.url, stt, 'voice-exotel-flow', [{ provider: 'exotel', ...ACCOUNT, from: '08047491899', app_id: FLOW, base_url: exotel.url }]);
    acc = await voiceAccount(gw, 1000);
  });
  after(async () => {
    await gw?.close();
    await exotel?.close();
    await stt?.server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers the applet with the number after the restart; another sid and an expired hand-off are 404', async () => {
    const res = await place(gw, acc.key, { model: 'voice-exotel-flow', to: '+919800000077' }); // answers and stays on the line
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    await transferredByApi(gw, acc.key, id, '+919800000041');

    // The instance that held the call's stream is gone; the applet's request reaches another.
    await gw.close();
    gw = await startVoiceGateway([], options, dir, { now: () => Date.now() + skewMs });
    const connectUrl = `${gw.url}/v1/voice/exotel/connect`;
    const connect = await exotel.askConnectApplet(connectUrl, id);
    assert.equal(connect.status, 200, JSON.stringify(connect.body));
    assert.deepEqual(connect.body, { fetch_after_attempt: false, destination: { numbers: ['+919800000041'] } });

    const unknown = await exotel.askConnectApplet(connectUrl, 'call_000000000000000000000000');
    assert.deepEqual([unknown.status, (unknown.body as { error?: { code?: string } }).error?.code], [404, 'not_found']);
    // A sid no store can key (a NUL): a clear 400 in the envelope, not a 500.
    const garbled = await fetch(`${connectUrl}?CallSid=%00`);
    assert.deepEqual([garbled.status, ((await garbled.json()) as { error?: { code?: string } }).error?.code], [400, 'invalid_request']);

    skewMs = TRANSFER_TTL_MS + 1000; // past the hand-off's 10 minutes (the store's TTL sweep has not run: the read compares times)
    const expired = await exotel.askConnectApplet(connectUrl, id);
    assert.deepEqual([expired.status, (expired.body as { error?: { code?: string } }).error?.code], [404, 'not_found']);
  });
});
