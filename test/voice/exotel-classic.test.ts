// Exotel as most Indian accounts have it (issue 39, item 8), against the fake Exotel
// (test/fakes/exotel.ts) over real loopback sockets: calls placed through the long-standing v1 API
// with a flow (a route's `app_id`), whose Voicebot applet asks the gateway for the call's stream
// (GET /v1/voice/exotel/voicebot) and streams in real time; ExoPhones written 0XXXXXXXXXX; Exotel's
// ring timeout; and what Exotel's details and callbacks say a call lasted.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { exotelCarrier } from '../../src/providers/exotel/voice.ts';
import {
  assertDisputeCall,
  carrierModel,
  ended,
  localSpeech,
  place,
  startVoiceGateway,
  transferredByApi,
  voiceAccount,
  waitForCall,
  walletMicrocents,
  type VoiceAccount,
} from './helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from './simulated.ts';

const ACCOUNT = { account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token' };
/** A flow of the account's whose Voicebot applet streams to the gateway, and the route that calls through it (its ExoPhone as Exotel writes it). */
const FLOW = '4242';
const V1_ROUTE = { provider: 'exotel', ...ACCOUNT, from: '08047491899', app_id: FLOW };

describe('Exotel v1 calls through a flow, and ExoPhones written 0XXXXXXXXXX', () => {
  let gw: TestGateway;
  let exotel: FakeExotel;
  let stt: ScriptedStt;
  let acc: VoiceAccount;
  let speaker: VoiceAccount;
  before(async () => {
    stt = await ScriptedStt.start();
    const speak = (input: string, voice: string) => localSpeech(gw.url, speaker.key, input, voice);
    exotel = await FakeExotel.start({
      accountSid: ACCOUNT.account_sid,
      apiKey: ACCOUNT.api_key,
      apiToken: ACCOUNT.api_token,
      callees: CALLEES as never,
      speak,
    });
    gw = await startVoiceGateway([], { voice: { mediaTimeoutMs: 10_000, minAffordableSeconds: 10, simulator: { callees: [] } } });
    // What the account set in Exotel's dashboard: the flow's Voicebot applet asks the gateway for the stream.
    exotel.flows.set(FLOW, `${gw.url}/v1/voice/exotel/voicebot`);
    await putScriptedVoice(gw.url, stt, 'voice-exotel-v1', [{ ...V1_ROUTE, base_url: exotel.url }]);
    acc = await voiceAccount(gw, 1000);
    speaker = await voiceAccount(gw, 100);
  });
  after(async () => {
    await gw?.destroy();
    await exotel?.close();
    await stt?.server.close();
  });

  const dial = (to: string, body: Record<string, unknown> = {}) => place(gw, acc.key, { model: 'voice-exotel-v1', to, ...body });
  const connectOf = (id: string) => exotel.requests.find((r) => r.path.endsWith('/Calls/connect.json') && r.form.get('CustomField') === id)!;
  const carrier = () =>
    exotelCarrier(
      { baseUrl: exotel.url, accountSid: ACCOUNT.account_sid, apiKey: ACCOUNT.api_key, apiToken: ACCOUNT.api_token, from: V1_ROUTE.from, appId: FLOW },
      { callbackUrl: () => '', callbackToken: () => '', logger: pino({ level: 'silent' }) },
    );

  it('dials through the flow; its Voicebot applet gets the stream from the gateway; the turns run; billed to the second once; Exotel says how long', async () => {
    stt.say('ATM did not give money but my account got debited', 'haan');
    const before = await walletMicrocents(gw, acc.session);
    // The call's own caller id, written as E.164: the route's ExoPhone all the same.
    const res = await dial('+919800000010', { from: '+918047491899' });
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    const c = await assertDisputeCall(gw, acc.key, id);
    assert.equal(before - (await walletMicrocents(gw, acc.session)), c.billed_seconds * 100_000, 'charged once, at 0.1 cent a second');
    assert.deepEqual(
      gw.events.filter((e) => e.fields.call_id === id).map((e) => e.event),
      ['call.answered', 'call.action', 'call.ended'],
    );

    // The v1 form, as Exotel documents it (the fake refuses anything else): no stream URL, the flow instead.
    const rest = connectOf(id);
    assert.ok(rest, 'placed with POST /v1/Accounts/{sid}/Calls/connect.json');
    assert.equal(rest.authorization, `Basic ${Buffer.from('exo-key:exo-token').toString('base64')}`);
    assert.deepEqual(
      ['From', 'CallerId', 'Url', 'CallType', 'TimeLimit', 'TimeOut', 'CustomField'].map((f) => rest.form.get(f)),
      ['+919800000010', '08047491899', `http://my.exotel.com/acme1/exoml/start_voice/${FLOW}`, 'trans', '600', '30', id],
    );
    assert.equal(rest.form.get('StreamUrl'), null);
    assert.deepEqual(rest.form.getAll('StatusCallbackEvents[]'), ['answered', 'terminal']);
    assert.equal(rest.form.get('StatusCallbackContentType'), 'application/json', "the callbacks' body named, JSON");
    const callback = new URL(rest.form.get('StatusCallback')!);
    assert.equal(`${callback.origin}${callback.pathname}`, `${gw.url}/v1/voice/calls/${id}/callback/exotel`);
    assert.ok(exotel.callbacks.length >= 4 && exotel.callbacks.every((x) => x.code === 200), JSON.stringify(exotel.callbacks));

    const sent = exotel.streams.get(id)!;
    assert.ok(sent.media.length >= 10 && sent.marks >= 3, `${sent.media.length} media messages, ${sent.marks} marks`);
    assert.deepEqual(
      sent.media.filter((bytes) => bytes % 320 !== 0 || bytes < 3200),
      [],
    );

    // What Exotel's v1 details say the call lasted (`Duration`, at …/Calls/{sid}.json): within a
    // second or two of the gateway's (each clock its own answer and end).
    const said = await carrier().duration!(exotel.sidOf(id)!);
    assert.ok(said !== null && Math.abs(said - c.duration_seconds) <= 2, `Exotel says ${said} s, the call lasted ${c.duration_seconds} s`);
  });

  it("a transfer: the gateway ends the Voicebot's stream, and the flow's Connect applet is told by its dynamic URL to dial the API's `to`", async () => {
    const res = await dial('+919800000077'); // answers and stays on the line
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    await transferredByApi(gw, acc.key, id, '+919800000041');
    const connect = await exotel.askConnectApplet(`${gw.url}/v1/voice/exotel/connect`, id);
    assert.equal(connect.status, 200, JSON.stringify(connect.body));
    assert.deepEqual((connect.body as { destination: unknown }).destination, { numbers: ['+919800000041'] });
    assert.equal((connect.body as { fetch_after_attempt: boolean }).fetch_after_attempt, false);
    // Another call's sid (or a guess) learns nothing.
    const other = await exotel.askConnectApplet(`${gw.url}/v1/voice/exotel/connect`, 'call_000000000000000000000000');
    assert.equal(other.status, 404);
  });

  it("the applet's URL answers a call's stream only to Exotel's own CallSid for it", async () => {
    const res = await dial('+919800000099');
    const id = res.body.id as string;
    await waitForCall(gw, acc.key, id, (x) => x.status === 'in_progress');
    const ask = (query: Record<string, string>) => call(gw.url, 'GET', `/v1/voice/exotel/voicebot?${new URLSearchParams(query)}`);
    const wrong = await ask({ CallSid: 'f'.repeat(32), CustomField: id, CallFrom: '+919800000099', Direction: 'outbound-api' });
    assert.deepEqual([wrong.status, wrong.body.error?.code], [404, 'not_found']);
    assert.equal((await ask({ CallSid: exotel.sidOf(id)!, CustomField: 'call_nope' })).status, 404);
    const right = await ask({ CallSid: exotel.sidOf(id)!, CustomField: id, 'sample-rate': '16000', flow_id: FLOW });
    assert.equal(right.status, 200, right.text);
    const url = new URL(right.body.url);
    assert.equal(`${url.protocol}//${url.host}${url.pathname}`, `${gw.url.replace(/^http/, 'ws')}/v1/voice/calls/${id}/stream`);
    assert.deepEqual([url.searchParams.get('call_id'), url.searchParams.get('sample-rate')], [id, '16000']);
    assert.match(url.searchParams.get('token')!, /^[A-Za-z0-9_-]{43}$/);
    assert.equal((await call(gw.url, 'POST', `/v1/voice/calls/${id}/hangup`, { token: acc.key })).status, 200);
    await waitForCall(gw, acc.key, id, ended);
  });

  it('a call the gateway gave up on while it rang stops ringing at Exotel too (TimeOut is the ring timeout)', async () => {
    const res = await dial('+919800000003', { ring_timeout_seconds: 5 });
    const id = res.body.id as string;
    const c = await waitForCall(gw, acc.key, id, ended);
    assert.deepEqual([c.status, c.end_reason, c.billed_seconds], ['no_answer', 'ring_timeout', 0]);
    assert.equal(connectOf(id).form.get('TimeOut'), '5');
    for (let i = 0; i < 30 && exotel.leg(id)?.status !== 'no-answer'; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(exotel.leg(id), { status: 'no-answer', billedSeconds: 0, answered: false });
  });

  it('ExoPhones: 0XXXXXXXXXX and +91… are one number on routes and calls; garbage is refused', async () => {
    const put = (id: string, route: Record<string, unknown>) => call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body: carrierModel(route) });
    const exo = { provider: 'exotel', base_url: exotel.url, ...ACCOUNT };
    assert.equal((await put('voice-exo-national', { ...exo, from: '08044556677' })).status, 201);
    for (const from of ['0804455667', '00804455667', '+91804455', '08x44556677', '+9180445566778899']) {
      const r = await put('voice-exo-bad', { ...exo, from });
      assert.equal(r.status, 400, `${from}: ${r.text}`);
      assert.match(`${r.body.error?.param} ${r.body.error?.message}`, /from/, r.text);
    }
    const twilio = await put('voice-twilio-national', { provider: 'twilio', account_sid: 'AC1', api_key: 'k', from: '08044556677' });
    assert.equal(twilio.status, 400, 'Twilio calls from E.164 numbers');
    const app = await put('voice-exo-app', { ...exo, from: '+918044556677', app_id: 'flow-1' });
    assert.equal(app.status, 400, 'an app id is digits');

    // A call names the route's ExoPhone either way; another number is refused.
    const body = (from: string) => ({ model: 'voice-exotel-v1', to: '+919800000012', from });
    assert.equal((await place(gw, acc.key, body('0804749189'))).status, 400);
    const other = await place(gw, acc.key, body('08044556677'));
    assert.deepEqual([other.status, other.body.error?.param], [400, 'from']);
    const national = await place(gw, acc.key, body('08047491899'));
    assert.equal(national.status, 202, national.text);
    const c = await waitForCall(gw, acc.key, national.body.id, ended, 30_000);
    assert.equal(c.from, '08047491899');
    assert.equal(connectOf(national.body.id).form.get('CallerId'), '08047491899');
  });

  it("durations: Exotel's callbacks read by what they give, the best first (ConversationDuration, Duration, EndTime - StartTime)", async () => {
    const res = await dial('+919800000012');
    const id = res.body.id as string;
    const c = await waitForCall(gw, acc.key, id, ended, 30_000);
    const sid = exotel.sidOf(id)!;
    for (let i = 0; i < 30 && !exotel.callbackParams.some((x) => x.sid === sid && x.params.some(([k, v]) => k === 'EventType' && v === 'terminal')); i++)
      await new Promise((r) => setTimeout(r, 100));
    const terminal = new Map(exotel.callbackParams.find((x) => x.sid === sid && x.params.some(([k, v]) => k === 'EventType' && v === 'terminal'))!.params);
    const news = carrier().callbacks!.news;
    const talked = Number(terminal.get('ConversationDuration'));
    assert.ok(talked >= 1 && Math.abs(talked - c.duration_seconds) <= 2, `${talked} s against ${c.duration_seconds} s`);
    assert.deepEqual(news(terminal), { kind: 'ended', outcome: {}, durationS: talked });
    terminal.delete('ConversationDuration');
    const span = news(terminal);
    // StartTime is when Exotel put the call to the operator: the ringing (100 ms here) is in it
    // (whole seconds each, so a second either way).
    assert.ok(span.kind === 'ended' && span.durationS >= talked - 1 && span.durationS <= talked + 2, JSON.stringify(span));
    terminal.set('Duration', '7');
    assert.deepEqual(news(terminal), { kind: 'ended', outcome: {}, durationS: 7 });
  });
});
