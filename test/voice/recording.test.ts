// Recordings (issue 41 §3) on simulated calls: `record: true` stores both sides as two channels of
// one WAV (channel 0 the callee, channel 1 the agent, on the call's clock), served to the call's
// owner only, whole or by byte ranges, as MP3 too; deleted on DELETE; a spoken notice first.
// The carriers' own wires: recording-carriers.test.ts; kill -9: crash.test.ts; retention: recordings.test.ts.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { carrierModel, ended, voiceAccount, waitForCall } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';
import { assertSidesApart, fetchRecording, parseWav } from './recording-checks.ts';

const v = simulatedVoice();
const NOTICE = 'This call is recorded.';

/** The dispute callee's call, recorded, with the notice; its ended view. */
async function recordedCall(body: Record<string, unknown> = {}): Promise<any> {
  v.stt.say('the ATM did not give money but my account got debited', 'yes please');
  const placed = await v.dial('+919800000010', { record: true, recording_notice: NOTICE, ...body });
  assert.equal(placed.status, 202, placed.text);
  return waitForCall(v.gw, v.acc.key, placed.body.id, (c) => ended(c) && c.recording?.status !== 'recording', 40_000);
}

describe('voice call recordings (simulator)', () => {
  let c: any;

  it('records both sides as two time-aligned channels, the notice first', async () => {
    c = await recordedCall();
    assert.equal(c.status, 'completed', JSON.stringify(c));
    assert.equal(c.transcript[0].role, 'agent');
    assert.equal(c.transcript[0].text, NOTICE, 'the notice is said before the first message');
    assert.match(c.transcript[1].text, /./);
    assert.equal(c.recording.available, true, JSON.stringify(c.recording));
    assert.equal(c.recording.url, `/v1/voice/calls/${c.id}/recording`);
    const got = await fetchRecording(v.gw.url, v.acc.key, c.id);
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('content-type'), 'audio/wav');
    assert.equal(got.headers.get('accept-ranges'), 'bytes');
    const wav = parseWav(got.bytes);
    assert.ok(Math.abs(wav.seconds - c.recording.duration_seconds) < 0.01);
    // The recording runs from the answer to the end (the view's duration, to its 0.1 s, with a settle's slack).
    assert.ok(Math.abs(wav.seconds - c.duration_seconds) < 1.5, `recorded ${wav.seconds} s of a ${c.duration_seconds} s call`);
    assertSidesApart(wav, c.transcript);
  });

  it('serves byte ranges: 206 with Content-Range; a range past the end is 416 in the error envelope', async () => {
    const whole = await fetchRecording(v.gw.url, v.acc.key, c.id);
    const part = await fetch(`${v.gw.url}/v1/voice/calls/${c.id}/recording`, { headers: { authorization: `Bearer ${v.acc.key}`, range: 'bytes=44-1043' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 44-1043/${whole.bytes.length}`);
    assert.deepEqual(Buffer.from(await part.arrayBuffer()), whole.bytes.subarray(44, 1044));
    const tail = await fetch(`${v.gw.url}/v1/voice/calls/${c.id}/recording`, { headers: { authorization: `Bearer ${v.acc.key}`, range: 'bytes=-10' } });
    assert.equal(tail.status, 206);
    assert.deepEqual(Buffer.from(await tail.arrayBuffer()), whole.bytes.subarray(whole.bytes.length - 10));
    const bad = await fetch(`${v.gw.url}/v1/voice/calls/${c.id}/recording`, {
      headers: { authorization: `Bearer ${v.acc.key}`, range: `bytes=${whole.bytes.length}-` },
    });
    assert.equal(bad.status, 416);
    assert.equal(bad.headers.get('content-range'), `bytes */${whole.bytes.length}`);
    const body = (await bad.json()) as any;
    assert.equal(body.error.code, 'range_not_satisfiable');
  });

  it('serves an MP3 of it (stereo, its length), with ranges too', async () => {
    const mp3 = await fetchRecording(v.gw.url, v.acc.key, c.id, '?format=mp3');
    assert.equal(mp3.status, 200);
    assert.equal(mp3.headers.get('content-type'), 'audio/mpeg');
    const sync = mp3.bytes.indexOf(Buffer.from([0xff]));
    assert.ok(sync >= 0 && (mp3.bytes[sync + 1]! & 0xe0) === 0xe0, 'an MPEG frame sync');
    const mode = (mp3.bytes[sync + 3]! >> 6) & 3;
    assert.notEqual(mode, 3, 'not mono');
    // 32 kb/s: about 4 KB a second of the call.
    assert.ok(Math.abs(mp3.bytes.length / 4000 - c.recording.duration_seconds) < 1.5, `${mp3.bytes.length} bytes for ${c.recording.duration_seconds} s`);
    const part = await fetch(`${v.gw.url}/v1/voice/calls/${c.id}/recording?format=mp3`, {
      headers: { authorization: `Bearer ${v.acc.key}`, range: 'bytes=0-99' },
    });
    assert.equal(part.status, 206);
    const bad = await fetchRecording(v.gw.url, v.acc.key, c.id, '?format=flac');
    assert.equal(bad.status, 400);
  });

  it("is the call's owner's only: another account gets the 404 of an unknown call; the dashboard's session reads it", async () => {
    const other = await voiceAccount(v.gw, 0);
    const theirs = await fetchRecording(v.gw.url, other.key, c.id);
    const unknown = await fetchRecording(v.gw.url, other.key, 'call_000000000000000000000000');
    assert.equal(theirs.status, 404);
    assert.equal(unknown.status, 404);
    assert.equal(JSON.parse(theirs.bytes.toString()).error.code, JSON.parse(unknown.bytes.toString()).error.code);
    const del = await call(v.gw.url, 'DELETE', `/v1/voice/calls/${c.id}/recording`, { token: other.key });
    assert.equal(del.status, 404);
    const portal = await fetch(`${v.gw.url}/portal/voice/calls/${c.id}/recording`, { headers: { authorization: `Bearer ${v.acc.session}` } });
    assert.equal(portal.status, 200);
    assert.equal(portal.headers.get('content-type'), 'audio/wav');
  });

  it('a call not asked to record has none; the model may record by default, and the account set how long it is kept', async () => {
    const plain = await v.dial('+919800000012');
    const p = await waitForCall(v.gw, v.acc.key, plain.body.id, ended, 30_000);
    assert.equal(p.recording, null);
    assert.equal((await fetchRecording(v.gw.url, v.acc.key, p.id)).status, 404);
    const voice = { ...carrierModel({ provider: 'simulator' }), stt_model: 'stt-scripted', record: true, recording_retention_days: 3 };
    const put = await call(v.gw.url, 'PUT', '/admin/models/voice-rec', { token: ADMIN_TOKEN, body: voice });
    assert.equal(put.status, 201, put.text);
    const byModel = await v.dial('+919800000012', { model: 'voice-rec' });
    const m = await waitForCall(v.gw, v.acc.key, byModel.body.id, (x) => ended(x) && x.recording?.status !== 'recording', 30_000);
    assert.equal(m.recording.available, true, "recorded by the model's default");
    assert.ok(Math.abs((m.recording.expires_at - m.ended_at) / 86_400 - 3) < 0.01, "the model's 3 days");
    const limits = await call(v.gw.url, 'PATCH', `/admin/limits/user/${v.acc.id}`, { token: ADMIN_TOKEN, body: { recording_retention_days: 7 } });
    assert.equal(limits.status, 200, limits.text);
    assert.equal(limits.body.recording_retention_days, 7);
    try {
      const byAccount = await v.dial('+919800000012', { model: 'voice-rec' });
      const a = await waitForCall(v.gw, v.acc.key, byAccount.body.id, (x) => ended(x) && x.recording?.status !== 'recording', 30_000);
      assert.ok(Math.abs((a.recording.expires_at - a.ended_at) / 86_400 - 7) < 0.01, "the account's 7 days over the model's 3");
      const off = await v.dial('+919800000012', { model: 'voice-rec', record: false });
      const o = await waitForCall(v.gw, v.acc.key, off.body.id, ended, 30_000);
      assert.equal(o.recording, null, 'record: false over the model');
    } finally {
      await call(v.gw.url, 'PATCH', `/admin/limits/user/${v.acc.id}`, { token: ADMIN_TOKEN, body: { recording_retention_days: null } });
    }
  });

  it('DELETE removes it (204): then 404, and the call says so', async () => {
    const del = await call(v.gw.url, 'DELETE', `/v1/voice/calls/${c.id}/recording`, { token: v.acc.key });
    assert.equal(del.status, 204);
    assert.equal((await fetchRecording(v.gw.url, v.acc.key, c.id)).status, 404);
    assert.equal((await fetchRecording(v.gw.url, v.acc.key, c.id, '?format=mp3')).status, 404);
    const after = (await call(v.gw.url, 'GET', `/v1/voice/calls/${c.id}`, { token: v.acc.key })).body;
    assert.deepEqual(after.recording, { available: false, status: 'deleted', duration_seconds: null, url: null, expires_at: null });
    assert.equal((await call(v.gw.url, 'DELETE', `/v1/voice/calls/${c.id}/recording`, { token: v.acc.key })).status, 404);
  });
});
