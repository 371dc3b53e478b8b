// Keys the agent sends (POST /v1/voice/calls/{id}/dtmf) against a fake Twilio: the tones are played
// in-band into the Media Stream (neither carrier's stream carries keys from the bot) and the fake
// callee's Goertzel detector (test/fakes/goertzel.ts) hears exactly the keys sent; the transcript
// has the agent turn with `dtmf`. And GET /v1/voice/concurrency: the account's calls not ended, its limit.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { detectDtmf } from '../fakes/goertzel.ts';
import { dtmfTones } from '../../src/voice/dtmf.ts';
import { carrierModel, ended, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';

const CALLEES = [{ to: '*', answer: 'answer' as const, ring_ms: 100, steps: [] }];

describe("keys the agent sends, and the account's concurrency", () => {
  let gw: TestGateway;
  let twilio: FakeTwilio;
  let acc: VoiceAccount;
  before(async () => {
    twilio = await FakeTwilio.start({ accountSid: 'ACkeys', authToken: 'keys-auth-token', callees: CALLEES });
    gw = await startVoiceGateway([]);
    const model = carrierModel({ provider: 'twilio', base_url: twilio.url, account_sid: 'ACkeys', api_key: 'keys-auth-token', from: '+14155550100' });
    assert.equal((await call(gw.url, 'PUT', '/admin/models/voice-keys', { token: ADMIN_TOKEN, body: model })).status, 201);
    acc = await voiceAccount(gw);
  });
  after(async () => {
    await gw.destroy();
    await twilio.close();
  });

  it('the detector hears the generated tones exactly (and no key in silence)', () => {
    assert.equal(detectDtmf(dtmfTones('0123456789*#ABCD').mulaw), '0123456789*#ABCD');
    assert.equal(detectDtmf(dtmfTones('11w22').mulaw), '1122', 'a repeated key is two keys, the pause none');
    assert.equal(detectDtmf(Buffer.alloc(8000, 0xff)), '');
  });

  it('POST …/dtmf plays the keys in-band on the Twilio stream: the callee decodes them; an agent turn with dtmf', async () => {
    const res = await place(gw, acc.key, { model: 'voice-keys', to: '+919800000050', first_message: { mode: 'wait_for_callee' } });
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    await waitForCall(gw, acc.key, id, (c) => c.status === 'in_progress');
    const busy = await call(gw.url, 'GET', '/v1/voice/concurrency', { token: acc.key });
    assert.deepEqual([busy.status, busy.body], [200, { in_progress: 1, limit: 5 }]);
    await new Promise((r) => setTimeout(r, 500)); // the stream has started
    const sent = await call(gw.url, 'POST', `/v1/voice/calls/${id}/dtmf`, { token: acc.key, body: { digits: '19#*0' } });
    assert.equal(sent.status, 202, sent.text);
    const c = await waitForCall(gw, acc.key, id, (x) => x.transcript?.some((t: { dtmf?: string }) => t.dtmf));
    const turn = c.transcript.find((t: { dtmf?: string }) => t.dtmf);
    assert.deepEqual([turn.role, turn.dtmf, turn.text, turn.interrupted], ['agent', '19#*0', '19#*0', false], JSON.stringify(c.transcript));
    assert.equal(detectDtmf(Buffer.concat(twilio.heard.get(id) ?? [])), '19#*0', 'what the callee heard');
    for (const digits of ['12x', '', '1'.repeat(33)]) {
      const bad = await call(gw.url, 'POST', `/v1/voice/calls/${id}/dtmf`, { token: acc.key, body: { digits } });
      assert.equal(bad.status, 400, bad.text);
    }
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    await waitForCall(gw, acc.key, id, ended);
    const over = await call(gw.url, 'POST', `/v1/voice/calls/${id}/dtmf`, { token: acc.key, body: { digits: '1' } });
    assert.deepEqual([over.status, over.body.error?.code], [409, 'call_not_active']);
    const idle = await call(gw.url, 'GET', '/v1/voice/concurrency', { token: acc.key });
    assert.deepEqual(idle.body, { in_progress: 0, limit: 5 });
    const other = await voiceAccount(gw, 0);
    const theirs = await call(gw.url, 'POST', `/v1/voice/calls/${id}/dtmf`, { token: other.key, body: { digits: '1' } });
    assert.equal(theirs.status, 404);
  });
});
