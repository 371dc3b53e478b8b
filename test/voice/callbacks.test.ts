// A call's answer when the carriers' status callbacks have a bad day (issue 39, item 1), through a
// fake Exotel and a fake Twilio (test/fakes/bad-day.ts) over real loopback sockets: the answer's
// callback lost, 4 s late, or posted after the terminal one and three times over; Exotel's JSON and
// multipart bodies. The stream's authenticated `start` is proof of the answer: each answered call
// ends completed, billed from its answer within a second of what the carrier counted and never
// more, with its greeting, turn times from 0 and `call.answered` once. A busy line is busy whatever
// the body's encoding; a body the route cannot read is a 400 in the error envelope.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, type TestGateway } from '../helper.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { SpeechClip } from '../../src/speech/clip.ts';
import { twilioSignature } from '../../src/providers/twilio/voice.ts';
import { carrierModel, ended, place, startVoiceGateway, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';

/** Listens to the greeting, then stays 4.5 s (past a 4 s late callback) and hangs up. */
const talker = (to: string) => ({
  to,
  answer: 'answer' as const,
  ring_ms: 100,
  steps: [{ wait_agent: 'done' as const, ms: 300 }, { silence_ms: 4500 }, { hangup: true as const }],
});
const busy = (to: string) => ({ to, answer: 'busy' as const, ring_ms: 100, steps: [] });

const EXOTEL = {
  lost: '+919800000050',
  late: '+919800000051',
  reordered: '+919800000052',
  json: '+919800000053',
  multipart: '+919800000054',
  busyJson: '+919800000055',
  busyMultipart: '+919800000056',
};
const TWILIO = { lost: '+919800000060', late: '+919800000061', busy: '+919800000062' };
const CALLEES = [
  ...[EXOTEL.lost, EXOTEL.late, EXOTEL.reordered, EXOTEL.json, EXOTEL.multipart, TWILIO.lost, TWILIO.late].map(talker),
  busy(EXOTEL.busyJson),
  busy(EXOTEL.busyMultipart),
  busy(TWILIO.busy),
];
const silence = async () => new SpeechClip(Buffer.alloc(8000));

describe("a call's answer when the carriers' callbacks are lost, late, repeated or out of order", { concurrency: true }, () => {
  let gw: TestGateway;
  let exotel: FakeExotel;
  let twilio: FakeTwilio;
  /** An account per carrier: each has at most 5 calls at once (the accounts' default limit). */
  const acc: Record<string, VoiceAccount> = {};
  before(async () => {
    exotel = await FakeExotel.start({ accountSid: 'acme1', apiKey: 'exo-key', apiToken: 'exo-token', callees: CALLEES, speak: silence });
    exotel.badDays.set(EXOTEL.lost, { dropAnswered: true });
    exotel.badDays.set(EXOTEL.late, { answeredDelayMs: 4000 });
    exotel.badDays.set(EXOTEL.reordered, { reorder: true, repeat: 3 });
    exotel.badDays.set(EXOTEL.json, { encoding: 'json' });
    exotel.badDays.set(EXOTEL.multipart, { encoding: 'multipart' });
    exotel.badDays.set(EXOTEL.busyJson, { encoding: 'json' });
    exotel.badDays.set(EXOTEL.busyMultipart, { encoding: 'multipart' });
    twilio = await FakeTwilio.start({ accountSid: 'ACtest', authToken: 'twilio-auth-token', callees: CALLEES, speak: silence });
    twilio.badDays.set(TWILIO.lost, { dropAnswered: true });
    twilio.badDays.set(TWILIO.late, { answeredDelayMs: 4000 });
    gw = await startVoiceGateway([]);
    const exotelRoute = { provider: 'exotel', base_url: exotel.url, account_sid: 'acme1', api_key: 'exo-key', api_token: 'exo-token', from: '+918047491899' };
    const twilioRoute = { provider: 'twilio', base_url: twilio.url, account_sid: 'ACtest', api_key: 'twilio-auth-token', from: '+14155550100' };
    for (const [id, route] of [
      ['voice-exotel', exotelRoute],
      ['voice-twilio', twilioRoute],
    ] as const)
      assert.equal((await call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body: carrierModel(route) })).status, 201);
    acc['voice-exotel'] = await voiceAccount(gw);
    acc['voice-twilio'] = await voiceAccount(gw);
  });
  after(async () => {
    await gw?.destroy();
    await exotel?.close();
    await twilio?.close();
  });

  /** Places the call and waits for its end; `counted`: the seconds the carrier's terminal callback said it lasted. */
  async function callThrough(model: 'voice-exotel' | 'voice-twilio', to: string): Promise<{ c: any; counted: () => Promise<number> }> {
    const { key } = acc[model]!;
    const res = await place(gw, key, { model, to, ring_timeout_seconds: 10 });
    assert.equal(res.status, 202, res.text);
    const id = res.body.id as string;
    const c = await waitForCall(gw, key, id, ended, 40_000);
    const counted = async () => {
      const deadline = Date.now() + 5000;
      for (;;) {
        const said =
          model === 'voice-exotel'
            ? exotel.callbacks.find((x) => x.sid === exotel.sidOf(id) && x.event === 'terminal')?.seconds
            : twilio.callbacks.find((x) => x.sid === twilio.sidOf(id) && x.status === 'completed')?.seconds;
        if (said !== undefined) return said;
        assert.ok(Date.now() < deadline, 'the carrier posted its terminal callback');
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    return { c, counted };
  }

  /** Completed, billed from the answer within a second of what the carrier counted and never more; greeting; turns from 0; events once. */
  async function assertAnswered(model: 'voice-exotel' | 'voice-twilio', to: string): Promise<any> {
    const { c, counted } = await callThrough(model, to);
    assert.deepEqual([c.status, c.end_reason], ['completed', 'callee_hangup'], JSON.stringify(c));
    const seconds = await counted();
    assert.ok(c.billed_seconds <= seconds && c.billed_seconds >= seconds - 1, `billed ${c.billed_seconds} s, the carrier counted ${seconds} s`);
    assert.equal(c.transcript[0]?.response_id, 'GEN.GREETING', JSON.stringify(c.transcript));
    for (const t of c.transcript) assert.ok(t.start >= 0 && t.end >= t.start, `a turn at ${t.start}-${t.end} s`);
    assert.deepEqual(
      gw.events.filter((e) => e.fields.call_id === c.id).map((e) => e.event),
      ['call.answered', 'call.ended'],
      'once each',
    );
    return c;
  }

  const codes = (fake: { callbacks: { sid: string; code: number }[] }, sid: string | undefined) =>
    fake.callbacks.filter((x) => x.sid === sid).map((x) => x.code);

  it('Exotel, the answered callback lost: the stream start answers the call', async () => {
    await assertAnswered('voice-exotel', EXOTEL.lost);
  });

  it('Exotel, the answered callback 4 s late: it changes nothing (no greeting lost, nothing unbilled)', async () => {
    const c = await assertAnswered('voice-exotel', EXOTEL.late);
    const sid = exotel.sidOf(c.id);
    assert.ok(
      exotel.callbacks.some((x) => x.sid === sid && x.event === 'answered' && x.code === 200),
      'the late callback came, and was taken',
    );
  });

  it('Exotel, every callback three times and the answered ones after the terminal ones', async () => {
    const c = await assertAnswered('voice-exotel', EXOTEL.reordered);
    const sid = exotel.sidOf(c.id);
    const posted = () => exotel.callbacks.filter((x) => x.sid === sid && x.event !== 'ringing').map((x) => x.event);
    for (const deadline = Date.now() + 5000; posted().length < 6 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(posted(), ['terminal', 'terminal', 'terminal', 'answered', 'answered', 'answered']);
    assert.ok(
      codes(exotel, sid).every((x) => x === 200),
      JSON.stringify(codes(exotel, sid)),
    );
  });

  it('Exotel, JSON and multipart callback bodies: read (200), the call answered and billed as counted', async () => {
    for (const to of [EXOTEL.json, EXOTEL.multipart]) {
      const c = await assertAnswered('voice-exotel', to);
      const sid = exotel.sidOf(c.id);
      assert.ok(codes(exotel, sid).length >= 4 && codes(exotel, sid).every((x) => x === 200), JSON.stringify(codes(exotel, sid)));
    }
  });

  it('Exotel, a busy line reported in JSON or multipart: busy, free', async () => {
    for (const to of [EXOTEL.busyJson, EXOTEL.busyMultipart]) {
      const { c } = await callThrough('voice-exotel', to);
      assert.deepEqual([c.status, c.end_reason, c.billed_seconds], ['busy', 'dial_busy', 0], to);
    }
  });

  it('Twilio, the in-progress callback lost or 4 s late: the stream start answers the call', async () => {
    await Promise.all([assertAnswered('voice-twilio', TWILIO.lost), assertAnswered('voice-twilio', TWILIO.late)]);
  });

  it("Twilio's signature covers form parameters only: the same signed fields as JSON are refused", async () => {
    const { c } = await callThrough('voice-twilio', TWILIO.busy);
    assert.equal(c.status, 'busy');
    const path = `/v1/voice/calls/${c.id}/callback/twilio`;
    const params: [string, string][] = [
      ['CallSid', 'CAx'],
      ['CallStatus', 'completed'],
    ];
    const signature = twilioSignature('twilio-auth-token', `${gw.url}${path}`, params);
    const asJson = await call(gw.url, 'POST', path, { body: Object.fromEntries(params), headers: { 'x-twilio-signature': signature } });
    assert.deepEqual([asJson.status, asJson.body.error?.code], [403, 'permission_denied'], asJson.text);
    const asForm = await call(gw.url, 'POST', path, {
      raw: new URLSearchParams(params).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
    });
    assert.equal(asForm.status, 200, asForm.text);
  });

  it('a callback body the route cannot read is a 400 (413, 415) in the error envelope', async () => {
    const path = '/v1/voice/calls/call_000000000000000000000000/callback/exotel?token=t';
    const json = { 'content-type': 'application/json' };
    const post = (raw: string | Uint8Array, headers: Record<string, string>) => call(gw.url, 'POST', path, { raw, headers });
    const multipart = (body: string) => ({ raw: body, headers: { 'content-type': 'multipart/form-data; boundary=XX' } });
    const cases: [string, { raw: string; headers: Record<string, string> }, number, string][] = [
      ['broken JSON', { raw: '{"Status": ', headers: json }, 400, 'invalid_json'],
      ['a JSON array', { raw: '[["Status", "busy"]]', headers: json }, 400, 'invalid_request'],
      ['a JSON string', { raw: '"busy"', headers: json }, 400, 'invalid_request'],
      ['a file', multipart('--XX\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\n\r\nhello\r\n--XX--\r\n'), 400, 'invalid_request'],
      ['unterminated multipart', multipart('--XX\r\nContent-Disposition: form-data; name="Status"\r\n\r\nbusy'), 400, 'invalid_request'],
      ['a 20 KB form', { raw: `Status=${'x'.repeat(20_000)}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 413, 'body_too_large'],
      ['plain text', { raw: 'Status=busy', headers: { 'content-type': 'text/plain' } }, 415, 'unsupported_media_type'],
    ];
    for (const [what, body, status, code] of cases) {
      const res = await post(body.raw, body.headers);
      assert.deepEqual([res.status, res.body.error?.code], [status, code], `${what}: ${res.text}`);
      assert.equal(typeof res.body.error.message, 'string', what);
    }
  });
});
