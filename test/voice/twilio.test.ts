// The twilio carrier against a fake Twilio (test/fakes/twilio.ts) over real loopback sockets: the
// REST call with TwiML that connects the stream (the call's token as a <Parameter>), signed status
// callbacks delivered twice and out of order, the Media Streams socket opened by the fake, hang-up
// by REST; a forged or unsigned callback is 403 and changes nothing.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from '../helper.ts';
import { createLogger } from '../../src/logger.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { TWILIO_WSS_WARNING, twilioSignature } from '../../src/providers/twilio/voice.ts';
import { carrierModel, ended, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';

const CALLEES = [
  { to: '+919800000002', answer: 'busy' as const, ring_ms: 100, steps: [] },
  { to: '+919800000030', answer: 'answer' as const, ring_ms: 200, steps: [{ silence_ms: 1500 }, { hangup: true as const }] },
  { to: '+919800000031', answer: 'answer' as const, ring_ms: 60_000, steps: [] },
  { to: '*', answer: 'answer' as const, ring_ms: 100, steps: [] },
];

/** A voice model whose one route is the (fake) Twilio at `baseUrl`. */
const twilioModel = (baseUrl: string) =>
  carrierModel({ provider: 'twilio', base_url: baseUrl, account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' });

describe('voice calls through a (fake) Twilio', () => {
  let gw: TestGateway;
  let twilio: FakeTwilio;
  let acc: VoiceAccount;
  before(async () => {
    twilio = await FakeTwilio.start({ accountSid: 'ACtest', authToken: 'twilio-auth-token', callees: CALLEES });
    gw = await startVoiceGateway([]);
    const model = twilioModel(twilio.url);
    assert.equal((await call(gw.url, 'PUT', '/admin/models/voice-twilio', { token: ADMIN_TOKEN, body: model })).status, 201);
    // A first route whose API is down: calls fail over to the second before anything was dialled.
    const down = { provider: 'twilio', base_url: 'http://127.0.0.1:9', account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' };
    assert.equal(
      (await call(gw.url, 'PUT', '/admin/models/voice-failover', { token: ADMIN_TOKEN, body: { ...model, routes: [down, ...model.routes] } })).status,
      201,
    );
    // A route whose auth token Twilio does not know: its API answers 401.
    const badToken = { ...model.routes[0], api_key: 'not-the-auth-token' };
    assert.equal((await call(gw.url, 'PUT', '/admin/models/voice-bad-token', { token: ADMIN_TOKEN, body: { ...model, routes: [badToken] } })).status, 201);
    acc = await voiceAccount(gw);
  });
  after(async () => {
    await gw.destroy();
    await twilio.close();
  });

  const dial = (to: string) => place(gw, acc.key, { model: 'voice-twilio', to, first_message: { mode: 'wait_for_callee' } });

  it('places the call by REST with TwiML that connects the media stream; callbacks twice and out of order; billed once', async () => {
    const res = await dial('+919800000030');
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 20_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    assert.ok(c.ringing_at !== null && c.answered_at !== null);
    assert.ok(c.billed_seconds >= 1 && c.billed_seconds <= 3, String(c.billed_seconds));
    const rest = twilio.requests.find((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === '+919800000030')!;
    assert.equal(rest.form.get('From'), '+14155550100');
    assert.equal(rest.form.get('StatusCallback'), `${gw.url}/v1/voice/calls/${res.body.id}/callback/twilio`);
    assert.deepEqual(rest.form.getAll('StatusCallbackEvent'), ['initiated', 'ringing', 'answered', 'completed']);
    assert.match(
      rest.form.get('Twiml')!,
      new RegExp(
        `<Connect><Stream url="ws://127\\.0\\.0\\.1:\\d+/v1/voice/calls/${res.body.id}/stream"><Parameter name="call_id" value="${res.body.id}"/><Parameter name="token" value="[^"]+"/></Stream></Connect>`,
      ),
    );
    assert.ok(twilio.callbacks.filter((x) => x.status === 'in-progress').length >= 2, 'repeated');
    assert.ok(
      twilio.callbacks.every((x) => x.code === 200),
      JSON.stringify(twilio.callbacks),
    );
    const events = gw.events.filter((e) => e.fields.call_id === res.body.id).map((e) => e.event);
    assert.deepEqual(events, ['call.answered', 'call.ended'], 'once each, whatever the callbacks repeated');
  });

  it('fails over to the next carrier route when one refuses the call before any answer', async () => {
    const res = await place(gw, acc.key, { model: 'voice-failover', to: '+919800000030', first_message: { mode: 'wait_for_callee' } });
    const c = await waitForCall(gw, acc.key, res.body.id, ended, 20_000);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
  });

  it('a route whose credentials Twilio refuses (401) ends the call failed / carrier_credentials_refused, not carrier_unavailable; free', async () => {
    const res = await place(gw, acc.key, { model: 'voice-bad-token', to: '+919800000030' });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(gw, acc.key, res.body.id, ended);
    assert.deepEqual([c.status, c.end_reason, c.billed_seconds, c.answered_at], ['failed', 'carrier_credentials_refused', 0, null], JSON.stringify(c));
    const refused = twilio.requests.filter(
      (r) => r.path.endsWith('/Calls.json') && r.authorization?.includes(Buffer.from('ACtest:not-the-auth-token').toString('base64')),
    );
    assert.equal(refused.length, 1, 'asked once, refused');
  });

  it('busy by callback: busy, dial_busy, free', async () => {
    const res = await dial('+919800000002');
    const c = await waitForCall(gw, acc.key, res.body.id, ended);
    assert.deepEqual([c.status, c.end_reason, c.billed_seconds], ['busy', 'dial_busy', 0]);
  });

  it("a signed `completed` whose CallDuration exceeds the call's age bills the age since the dial, never more", async () => {
    const res = await place(gw, acc.key, { model: 'voice-twilio', to: '+919800000031', ring_timeout_seconds: 90 });
    const id = res.body.id as string;
    assert.equal(res.status, 202, res.text);
    await new Promise((r) => setTimeout(r, 3000));
    const path = `/v1/voice/calls/${id}/callback/twilio`;
    const params: [string, string][] = [
      ['CallSid', 'CAlate'],
      ['CallStatus', 'completed'],
      ['CallDuration', '3600'],
    ];
    const signature = twilioSignature('twilio-auth-token', `${gw.url}${path}`, params);
    const posted = await call(gw.url, 'POST', path, {
      raw: new URLSearchParams(params).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
    });
    assert.equal(posted.status, 200, posted.text);
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    assert.ok(c.billed_seconds >= 3 && c.billed_seconds <= 5, `billed ${c.billed_seconds} s of a call placed about 3 s before`);
    assert.ok(c.answered_at >= c.dial_started_at, 'never answered before it was dialled');
  });

  it('hangs up through the REST API; refuses forged and unsigned callbacks (403) without a change', async () => {
    const res = await dial('+919800000099');
    const id = res.body.id as string;
    await waitForCall(gw, acc.key, id, (x) => x.status === 'in_progress');
    const url = `${gw.url}/v1/voice/calls/${id}/callback/twilio`;
    const params: [string, string][] = [
      ['CallSid', 'CAforged'],
      ['CallStatus', 'completed'],
      ['CallDuration', '1'],
    ];
    const body = new URLSearchParams(params).toString();
    const form = { 'content-type': 'application/x-www-form-urlencoded' };
    for (const signature of [twilioSignature('wrong-token', url, params), undefined]) {
      const forged = await call(gw.url, 'POST', `/v1/voice/calls/${id}/callback/twilio`, {
        raw: body,
        headers: signature ? { ...form, 'x-twilio-signature': signature } : form,
      });
      assert.deepEqual([forged.status, forged.body.error.code], [403, 'permission_denied']);
    }
    assert.equal((await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: acc.key })).body.status, 'in_progress');
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.equal(c.end_reason, 'api_hangup');
    const sid = twilio.requests.find((r) => r.path.endsWith('/Calls.json') && r.form.get('To') === '+919800000099');
    assert.ok(sid);
    assert.ok(
      twilio.requests.some((r) => /\/Calls\/CA[0-9a-f]+\.json$/.test(r.path) && r.form.get('Status') === 'completed'),
      'hung up by REST',
    );
  });
});

describe('Twilio and the public base URL, at start', () => {
  /** The warnings a gateway logs as it starts with a Twilio model and this public URL. */
  async function startWarnings(publicUrl: string): Promise<{ msg: string; models?: string[]; public_base_url?: string }[]> {
    const lines: { level: number; msg: string }[] = [];
    const logger = createLogger('warn', { write: (line: string) => void lines.push(JSON.parse(line)) });
    const gw = await startTestGateway({ voice: { publicUrl }, models: [{ id: 'voice-twilio', ...twilioModel('http://127.0.0.1:9') }] }, { logger });
    await gw.destroy();
    return lines.filter((l) => l.level === 40);
  }

  it('warns that Twilio streams over wss:// only when PUBLIC_BASE_URL is http, naming the models; not when it is https', async () => {
    const http = await startWarnings('http://gateway.example');
    const said = http.find((l) => l.msg === TWILIO_WSS_WARNING);
    assert.ok(said, JSON.stringify(http));
    assert.deepEqual([said.models, said.public_base_url], [['voice-twilio'], 'http://gateway.example']);
    assert.ok(!(await startWarnings('https://gateway.example')).some((l) => l.msg === TWILIO_WSS_WARNING));
  });
});
