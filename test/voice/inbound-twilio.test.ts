// Inbound calls through a (fake) Twilio (test/fakes/twilio.ts `incoming`) over real loopback sockets:
// the number's incoming-call webhook POSTed signed as Twilio signs, answered with TwiML whose
// <Connect><Stream> the caller opens (Media Streams, 20 ms frames paced in real time), the call
// answered by the number's agent and billed to its owner; a forged or unsigned webhook 403 with
// nothing placed; an unknown number and an owner who cannot pay answered <Say> and <Hangup/>, free;
// the same webhook posted twice places one call.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { carrierModel, ended, startVoiceGateway, voiceAccount, waitForCall, walletMicrocents, type VoiceAccount } from './helpers.ts';
import { UNAVAILABLE_LINE, UNKNOWN_NUMBER_LINE } from '../../src/voice/inbound.ts';
import { twilioSignature } from '../../src/providers/twilio/voice.ts';

const NUMBER = '+14155550111';
const CALLERS = [
  // Hears the greeting to its end, then hangs up.
  { to: '+919800000620', answer: 'answer' as const, ring_ms: 0, steps: [{ wait_agent: 'done' as const, ms: 300 }, { hangup: true as const }] },
];

describe('inbound calls through a (fake) Twilio', () => {
  let gw: TestGateway;
  let twilio: FakeTwilio;
  let acc: VoiceAccount;
  let webhook: string;
  const calls = async (key: string) => (await call(gw.url, 'GET', '/v1/voice/calls?limit=100', { token: key })).body.data as { id: string }[];
  before(async () => {
    twilio = await FakeTwilio.start({ accountSid: 'ACtest', authToken: 'twilio-auth-token', callees: CALLERS });
    gw = await startVoiceGateway([], { voice: { minAffordableSeconds: 10, mediaTimeoutMs: 10_000, simulator: { callees: [] } } });
    const model = carrierModel({ provider: 'twilio', base_url: twilio.url, account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' });
    assert.equal((await call(gw.url, 'PUT', '/admin/models/voice-twilio', { token: ADMIN_TOKEN, body: model })).status, 201);
    acc = await voiceAccount(gw);
    const number = { model: 'voice-twilio', owner: { type: 'user', id: acc.id } };
    assert.equal((await call(gw.url, 'PUT', `/admin/voice/numbers/${NUMBER}`, { token: ADMIN_TOKEN, body: number })).status, 201);
    webhook = `${gw.url}/v1/voice/inbound/twilio`;
  });
  after(async () => {
    await gw.destroy();
    await twilio.close();
  });

  it('answers the signed webhook with TwiML that connects the stream; the agent answers; billed to the owner; hung up by REST', async () => {
    const before = await walletMicrocents(gw, acc.session);
    const res = await twilio.incoming(webhook, { to: NUMBER, from: '+919800000620' });
    assert.equal(res.status, 200, res.twiml);
    const m =
      /^<Response><Connect><Stream url="ws:\/\/127\.0\.0\.1:\d+\/v1\/voice\/calls\/(call_[0-9a-f]{24})\/stream"><Parameter name="call_id" value="\1"\/><Parameter name="token" value="[^"]+"\/><\/Stream><\/Connect><\/Response>$/.exec(
        res.twiml,
      );
    assert.ok(m, res.twiml);
    const id = m[1]!;
    const c = await waitForCall(gw, acc.key, id, ended, 30_000);
    assert.deepEqual(
      [c.status, c.end_reason, c.direction, c.to, c.from],
      ['completed', 'callee_hangup', 'inbound', NUMBER, '+919800000620'],
      JSON.stringify(c),
    );
    assert.equal(c.transcript[0]?.response_id, 'GEN.GREETING', 'the agent spoke first');
    assert.ok((twilio.lines.get(id)?.media.length ?? 0) > 10, 'its audio reached the caller');
    assert.ok(c.billed_seconds >= 1, JSON.stringify(c));
    const hangup = twilio.requests.find((r) => r.method === 'POST' && r.path === `/2010-04-01/Accounts/ACtest/Calls/${res.sid}.json`);
    assert.equal(hangup?.form.get('Status'), 'completed', "the call's leg ended through Twilio's REST API");
    assert.equal(before - (await walletMicrocents(gw, acc.session)), c.billed_seconds * 100_000);
    assert.deepEqual(
      gw.events.filter((e) => e.fields.call_id === id).map((e) => e.event),
      ['call.answered', 'call.ended'],
    );
  });

  it('refuses a forged or unsigned webhook (403) and places nothing', async () => {
    const count = (await calls(acc.key)).length;
    const forged = await twilio.incoming(webhook, { to: NUMBER, from: '+919800000620' }, 'not-the-auth-token');
    assert.equal(forged.status, 403, forged.twiml);
    assert.equal(JSON.parse(forged.twiml).error.code, 'permission_denied');
    const unsigned = await fetch(webhook, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ AccountSid: 'ACtest', CallSid: 'CA1', From: '+919800000620', To: NUMBER }).toString(),
    });
    assert.equal(unsigned.status, 403);
    // Signed over its fields with the right token, but JSON: not a body Twilio sends or signs.
    const fields: [string, string][] = [
      ['AccountSid', 'ACtest'],
      ['CallSid', 'CA2'],
      ['From', '+919800000620'],
      ['To', NUMBER],
    ];
    const json = await call(gw.url, 'POST', '/v1/voice/inbound/twilio', {
      body: Object.fromEntries(fields),
      headers: { 'x-twilio-signature': twilioSignature('twilio-auth-token', webhook, fields) },
    });
    assert.equal(json.status, 403, 'a JSON body is not what Twilio signs');
    // Bad input: clear errors in the envelope, never a 500.
    const post = (body: string, type: string) => fetch(webhook, { method: 'POST', headers: { 'content-type': type }, body });
    for (const [res, status] of [
      [await post('hello', 'text/plain'), 415],
      [await post(`To=${'9'.repeat(2000)}`, 'application/x-www-form-urlencoded'), 400],
      [await post(`To=${'9'.repeat(20_000)}`, 'application/x-www-form-urlencoded'), 413],
    ] as const) {
      assert.equal(res.status, status, `${status}`);
      assert.ok(((await res.json()) as { error?: { code?: string } }).error?.code, 'the error envelope');
    }
    assert.equal((await calls(acc.key)).length, count);
  });

  it('answers an unknown number with a spoken line and a hang-up', async () => {
    const res = await twilio.incoming(webhook, { to: '+14155550122', from: '+919800000620' });
    assert.equal(res.status, 200);
    assert.equal(res.twiml, `<Response><Say>${UNKNOWN_NUMBER_LINE}</Say><Hangup/></Response>`);
    assert.equal(res.said, UNKNOWN_NUMBER_LINE);
  });

  it("answers <Say> and <Hangup/> when the owner's wallet cannot pay, for free", async () => {
    const empty = await voiceAccount(gw, 0);
    const body = { model: 'voice-twilio', owner: { type: 'user', id: empty.id } };
    assert.equal((await call(gw.url, 'PUT', '/admin/voice/numbers/+14155550133', { token: ADMIN_TOKEN, body })).status, 201);
    const res = await twilio.incoming(webhook, { to: '+14155550133', from: '+919800000620' });
    assert.equal(res.said, UNAVAILABLE_LINE, res.twiml);
    assert.match(res.twiml, /<Hangup\/><\/Response>$/);
    assert.equal((await calls(empty.key)).length, 0);
    assert.equal(await walletMicrocents(gw, empty.session), 0);
  });

  it('places one call when Twilio posts the same webhook twice', async () => {
    const count = (await calls(acc.key)).length;
    const form = [
      ['AccountSid', 'ACtest'],
      ['CallSid', 'CAdup0000000000000000000000000000'],
      ['From', '+919800000620'],
      ['To', NUMBER],
    ] as [string, string][];
    const post = () =>
      fetch(webhook, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature('twilio-auth-token', webhook, form) },
        body: new URLSearchParams(form).toString(),
      }).then((r) => r.text());
    const [a, b] = await Promise.all([post(), post()]);
    assert.equal(a, b, 'the same stream, the same token');
    assert.match(a, /<Connect><Stream/);
    assert.equal((await calls(acc.key)).length, count + 1);
  });
});
