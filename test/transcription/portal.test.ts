// The dashboard's speech routes under /portal, on the offline engines: a recording uploaded with the
// session becomes the same job /v1 shows (the same SRT, WebVTT and text), billed to the account under
// the key prefix `dashboard`; its recording is served to its owner with byte ranges (206, 416) and is
// 404 to anyone else; a text spoken and a clip transcribed through the session are billed likewise;
// an organization member's calls are paid by the organization; the cookie's cross-site rule holds for
// the uploads, and another page cannot embed the recording; bad input is answered in the envelope.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { conversationWav, noConversation } from './conversation.ts';
import { multipartForm } from './form.ts';
import { librivoxWav, missing } from '../speech/helpers.ts';
import { ADMIN_TOKEN, call, fundedAccount, joinOrg, startTestGateway, type TestGateway } from '../helper.ts';

const skip = noConversation || missing('ffmpeg', 'pocketsphinx', 'librivox');
const COOKIE = '__Host-gw_session';

describe('the dashboard’s speech routes', { skip }, () => {
  let gw: TestGateway;
  let owner: { token: string; key: string };
  let stranger: { token: string; key: string };
  let jobId = '';
  let recording: Buffer;

  before(async () => {
    gw = await startTestGateway({ transcription: { pollMs: 100 } });
    owner = await fundedAccount(gw.url);
    stranger = await fundedAccount(gw.url);
  });
  after(async () => gw?.destroy());

  const balance = async (token: string) => (await call(gw.url, 'GET', '/portal/wallet', { token })).body.balance_microcents as number;

  it('lists the account’s models with their prices', async () => {
    const res = await call(gw.url, 'GET', '/portal/models', { token: owner.token });
    assert.equal(res.status, 200, res.text);
    const byId = new Map(res.body.data.map((m: any) => [m.id, m]));
    assert.deepEqual((byId.get('stt-local') as any).pricing, { cents_per_minute: 0.1 });
    assert.ok((byId.get('tts-local') as any).pricing.cents_per_1k_chars > 0);
    assert.ok((byId.get('tts-local') as any).voices.includes('en-us'));
    assert.equal((await call(gw.url, 'GET', '/portal/models')).status, 401);
  });

  it('turns an upload into a job that /v1 shows alike, billed to the account under the prefix dashboard', async () => {
    const { bytes } = conversationWav(2);
    recording = bytes;
    const before = await balance(owner.token);
    const created = await call(gw.url, 'POST', '/portal/transcription/jobs', {
      token: owner.token,
      ...multipartForm({ model: 'stt-local', num_speakers: '2' }, bytes),
    });
    assert.equal(created.status, 202, created.text);
    jobId = created.body.id;
    assert.equal(created.headers.get('location'), `/portal/transcription/jobs/${jobId}`);
    let job: any;
    const until = Date.now() + 90_000;
    do {
      await new Promise((r) => setTimeout(r, 250));
      job = (await call(gw.url, 'GET', `/portal/transcription/jobs/${jobId}`, { token: owner.token })).body;
    } while ((job.status === 'queued' || job.status === 'processing') && Date.now() < until);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.deepEqual(job, (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${jobId}`, { token: owner.key })).body, 'the same job on /v1');
    assert.deepEqual([...new Set(job.segments.map((s: any) => s.speaker))].sort(), ['SPEAKER_00', 'SPEAKER_01']);
    // The dashboard's list leaves the transcripts out (it polls and shows neither); /v1's has them.
    const { text, segments, ...listed } = job;
    assert.deepEqual(
      (await call(gw.url, 'GET', '/portal/transcription/jobs', { token: owner.token })).body.data.find((j: any) => j.id === jobId),
      listed,
    );
    assert.equal((await call(gw.url, 'GET', '/v1/audio/transcriptions/jobs', { token: owner.key })).body.data.find((j: any) => j.id === jobId)?.text, text);
    assert.ok(segments.length > 0);

    for (const format of ['srt', 'vtt', 'text'] as const) {
      const v1 = await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${jobId}?response_format=${format}`, { token: owner.key });
      const portal = await call(gw.url, 'GET', `/portal/transcription/jobs/${jobId}?response_format=${format}`, { token: owner.token });
      assert.equal(v1.status, 200, v1.text);
      assert.equal(v1.headers.get('content-type'), 'text/plain; charset=utf-8');
      assert.equal(portal.text, v1.text, format);
    }
    const srt = (await call(gw.url, 'GET', `/portal/transcription/jobs/${jobId}?response_format=srt`, { token: owner.token })).text;
    const cues = srt.trim().split('\n\n');
    assert.equal(cues.length, job.segments.length);
    assert.match(cues[0]!, /^1\n\d\d:\d\d:\d\d,\d\d\d --> \d\d:\d\d:\d\d,\d\d\d\n\S/);
    const bad = await call(gw.url, 'GET', `/portal/transcription/jobs/${jobId}?response_format=mp3`, { token: owner.token });
    assert.deepEqual([bad.status, bad.body.error.code], [400, 'invalid_request']);

    await new Promise((r) => setTimeout(r, 200));
    const expected = Math.ceil(job.duration - 1e-9) * (0.1 / 60) * 1e6;
    assert.ok(Math.abs(before - (await balance(owner.token)) - expected) < 1.0001, 'charged its decoded seconds once');
    const records = (await call(gw.url, 'GET', '/portal/usage/records', { token: owner.token })).body.data;
    assert.equal(records.find((r: any) => r.request_id === jobId)?.key_prefix, 'dashboard');
  });

  it('serves the recording to its owner with byte ranges, and to nobody else', async () => {
    const url = `/portal/transcription/jobs/${jobId}/audio`;
    const size = recording.length;
    const whole = await fetch(gw.url + url, { headers: { authorization: `Bearer ${owner.token}` } });
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('accept-ranges'), 'bytes');
    assert.equal(whole.headers.get('content-type'), 'audio/wav');
    assert.equal(whole.headers.get('content-length'), String(size));
    assert.ok(Buffer.from(await whole.arrayBuffer()).equals(recording));

    const head = await fetch(gw.url + url, { method: 'HEAD', headers: { authorization: `Bearer ${owner.token}` } });
    assert.deepEqual([head.status, head.headers.get('content-length'), (await head.arrayBuffer()).byteLength], [200, String(size), 0]);

    const range = async (value: string) => {
      const res = await fetch(gw.url + url, { headers: { authorization: `Bearer ${owner.token}`, range: value } });
      return { status: res.status, range: res.headers.get('content-range'), body: Buffer.from(await res.arrayBuffer()) };
    };
    const first = await range('bytes=0-99');
    assert.deepEqual([first.status, first.range], [206, `bytes 0-99/${size}`]);
    assert.ok(first.body.equals(recording.subarray(0, 100)));
    const open = await range(`bytes=${size - 10}-`);
    assert.deepEqual([open.status, open.range], [206, `bytes ${size - 10}-${size - 1}/${size}`]);
    assert.ok(open.body.equals(recording.subarray(size - 10)));
    const suffix = await range('bytes=-5');
    assert.ok(suffix.status === 206 && suffix.body.equals(recording.subarray(size - 5)));
    const past = await range(`bytes=1000-${size * 2}`);
    assert.deepEqual([past.status, past.range, past.body.length], [206, `bytes 1000-${size - 1}/${size}`, size - 1000], 'an end past the blob is cut to it');
    for (const bad of [`bytes=${size}-`, 'bytes=10-5', 'bytes=abc', 'bytes=-0']) {
      const r = await range(bad);
      assert.deepEqual([r.status, r.range], [416, `bytes */${size}`], bad);
      assert.equal(JSON.parse(r.body.toString()).error.code, 'range_not_satisfiable');
    }
    assert.equal((await range('bytes=0-1,5-6')).status, 200, 'several ranges: the whole blob');
    assert.equal((await range('items=0-1')).status, 200, 'another unit: ignored');

    // Another account: 404 for the recording, the job and its transcript, as for an unknown id.
    for (const path of [url, `/portal/transcription/jobs/${jobId}`, `/portal/transcription/jobs/${jobId}?response_format=srt`]) {
      const res = await call(gw.url, 'GET', path, { token: stranger.token });
      assert.deepEqual([res.status, res.body.error.code], [404, 'not_found'], path);
    }
    assert.equal((await call(gw.url, 'GET', `/portal/transcription/jobs/txjob_${'0'.repeat(24)}/audio`, { token: owner.token })).status, 404);
    assert.equal((await call(gw.url, 'GET', url)).status, 401);

    // By the cookie: the dashboard's own page and the person opening the address are served; another page embedding it is refused.
    const cookie = { cookie: `${COOKIE}=${owner.token}` };
    assert.equal((await call(gw.url, 'GET', url, { headers: { ...cookie, 'sec-fetch-site': 'same-origin' } })).status, 200);
    assert.equal((await call(gw.url, 'GET', url, { headers: { ...cookie, 'sec-fetch-site': 'none' } })).status, 200);
    for (const site of ['same-site', 'cross-site']) {
      const res = await call(gw.url, 'GET', url, { headers: { ...cookie, 'sec-fetch-site': site } });
      assert.deepEqual([res.status, res.body.error.code], [403, 'cross_site_request'], site);
    }
  });

  it('refuses a cookie-signed upload that is not from the dashboard’s pages, before reading it', async () => {
    const form = multipartForm({ model: 'stt-local' }, readFileSync(librivoxWav('0870')));
    const cookie = `${COOKIE}=${owner.token}`;
    for (const headers of [{ cookie }, { cookie, 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'same-site' }] as Record<string, string>[]) {
      for (const path of ['/portal/transcription/jobs', '/portal/audio/transcriptions']) {
        const res = await call(gw.url, 'POST', path, { raw: form.raw, headers: { ...form.headers, ...headers } });
        assert.deepEqual([res.status, res.body.error.code], [403, 'cross_site_request'], path);
      }
    }
    const speech = await call(gw.url, 'POST', '/portal/audio/speech', { headers: { cookie }, body: { model: 'tts-local', voice: 'en-us', input: 'Hello.' } });
    assert.deepEqual([speech.status, speech.body.error.code], [403, 'cross_site_request']);
  });

  it('speaks a text and transcribes a clip for the session, billed to the account', async () => {
    const before = await balance(owner.token);
    const res = await fetch(`${gw.url}/portal/audio/speech`, {
      method: 'POST',
      headers: { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tts-local', voice: 'en-us', input: 'Hello from the dashboard.', response_format: 'pcm', sample_rate: 24000 }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'audio/L16');
    const pcm = Buffer.from(await res.arrayBuffer());
    assert.ok(pcm.length > 24000, `${pcm.length} bytes: over half a second of speech`);

    const clip = await call(gw.url, 'POST', '/portal/audio/transcriptions', {
      token: owner.token,
      ...multipartForm({ model: 'stt-local' }, readFileSync(librivoxWav('0870'))),
    });
    assert.equal(clip.status, 200, clip.text);
    assert.match(clip.body.text, /\w+ \w+/);
    assert.ok(clip.body.usage.seconds > 0);
    await new Promise((r) => setTimeout(r, 200));
    assert.ok((await balance(owner.token)) < before);
    const records = (await call(gw.url, 'GET', '/portal/usage/records', { token: owner.token })).body.data;
    assert.ok(
      ['tts-local', 'stt-local'].every((m) => records.some((r: any) => r.model === m && r.key_prefix === 'dashboard' && r.status === 'ok')),
      JSON.stringify(records),
    );

    const bad = await call(gw.url, 'POST', '/portal/audio/speech', { token: owner.token, body: { model: 'tts-local', voice: 'nobody', input: 'Hi' } });
    assert.deepEqual([bad.status, bad.body.error.code], [400, 'voice_not_supported']);
  });

  it('bills an organization member’s dashboard calls to the organization, as their keys’ calls', async () => {
    const boss = await fundedAccount(gw.url);
    const member = await fundedAccount(gw.url);
    const org = await call(gw.url, 'POST', '/portal/org', { token: boss.token, body: { name: 'Speech team' } });
    assert.equal(org.status, 201, org.text);
    const me = (await call(gw.url, 'GET', '/portal/me', { token: member.token })).body.user;
    await joinOrg(gw.url, boss.token, { email: me.email, token: member.token });
    const speak = () =>
      call(gw.url, 'POST', '/portal/audio/speech', {
        token: member.token,
        body: { model: 'tts-local', voice: 'en-us', input: 'Hello.', response_format: 'pcm' },
      });
    const refused = await speak();
    assert.deepEqual(
      [refused.status, refused.body.error.code],
      [402, 'insufficient_credit'],
      'the organization’s wallet is empty; the member’s own dollar is not used',
    );
    assert.match(refused.body.error.message, /organization's wallet/);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { org_id: org.body.id, amount_cents: 10 } })).status, 201);
    assert.equal((await speak()).status, 200);
  });

  it('answers bad input in the envelope, never a 500', async () => {
    const token = owner.token;
    const cases: [string, string, Parameters<typeof call>[3], number, string][] = [
      ['POST', '/portal/transcription/jobs', { token, body: { model: 'stt-local' } }, 400, 'invalid_request'],
      ['POST', '/portal/audio/transcriptions', { token, raw: 'hello', headers: { 'content-type': 'text/plain' } }, 415, 'unsupported_media_type'],
      [
        'POST',
        '/portal/transcription/jobs',
        { token, ...multipartForm({ model: 'stt-local', num_speakers: '99' }, Buffer.from('RIFF')) },
        400,
        'invalid_request',
      ],
      ['POST', '/portal/transcription/jobs', { token, ...multipartForm({ model: 'stt-local' }, Buffer.from('not audio at all')) }, 400, 'invalid_audio'],
      ['POST', '/portal/audio/speech', { token, body: { model: 'tts-local', voice: 'en-us', input: 'Hi', extra: 1 } }, 400, 'invalid_request'],
      ['POST', '/portal/audio/speech', { token, body: { model: 'stt-local', voice: 'en-us', input: 'Hi' } }, 404, 'model_not_found'],
      ['GET', '/portal/transcription/jobs/not-a-job/audio', { token }, 404, 'not_found'],
      ['GET', `/portal/transcription/jobs/${'x'.repeat(65)}`, { token }, 400, 'invalid_request'],
      ['GET', `/portal/transcription/jobs/${jobId}?response_format=srt&x=1`, { token }, 400, 'invalid_request'],
    ];
    for (const [method, path, opts, status, code] of cases) {
      const res = await call(gw.url, method, path, opts);
      assert.deepEqual([res.status, res.body?.error?.code], [status, code], `${method} ${path}: ${res.text.slice(0, 200)}`);
    }
  });
});
