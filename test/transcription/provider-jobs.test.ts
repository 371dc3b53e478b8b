// Transcription jobs on real provider protocols (loopback fakes of Sarvam's batch job API and
// Deepgram's callbacks): the recording is submitted once, polled or called back, the provider's
// speaker labels become SPEAKER_00/01 by first appearance, the job is charged once by the gateway's
// decoded seconds; a failed submission fails over to the next route; a provider's failure is free;
// a callback with a wrong token is ignored.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { wavBytes } from '../fakes/audio.ts';
import { startSarvamUpstream, type SarvamUpstream } from '../fakes/sarvam-upstream.ts';
import { startDeepgramUpstream, type DeepgramUpstream } from '../fakes/deepgram-upstream.ts';
import { multipartForm } from './form.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

const stt = (routes: object[]) => ({
  type: 'stt',
  owned_by: 'acme',
  languages: ['hi-IN', 'en-IN', 'or-IN'],
  modes: ['transcribe', 'translate'],
  jobs: true,
  diarization: true,
  pricing: { cents_per_minute: 0.6 },
  routes,
});

describe('transcription jobs on provider job APIs', () => {
  let gw: TestGateway;
  let sarvam: SarvamUpstream;
  let deepgram: DeepgramUpstream;
  let key: string;
  let session: string;

  before(async () => {
    sarvam = await startSarvamUpstream({ apiKey: 'sv-key' });
    deepgram = await startDeepgramUpstream({ apiKey: 'dg-key' });
    // publicUrl is the gateway's own address: set after it listens, through a second start on the same dir.
    gw = await startTestGateway({ transcription: { retentionDays: 30, capacity: 8, pollMs: 100, maxPollMs: 400, maxJobHours: 24, publicUrl: '' } });
    const dir = gw.dir;
    const url = gw.url;
    await gw.close();
    gw = await startTestGateway(
      { port: Number(new URL(url).port), transcription: { retentionDays: 30, capacity: 8, pollMs: 100, maxPollMs: 400, maxJobHours: 24, publicUrl: url } },
      { dir },
    );
    const put = async (id: string, body: object) =>
      assert.equal((await call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body })).status < 300, true);
    await put('stt-sarvam', stt([{ provider: 'sarvam', base_url: sarvam.url, api_key: 'sv-key', upstream_model: 'saaras:v3' }]));
    await put(
      'stt-failover',
      stt([
        { provider: 'sarvam', base_url: 'http://127.0.0.1:9', api_key: 'sv-key', upstream_model: 'saaras:v3' },
        { provider: 'sarvam', base_url: sarvam.url, api_key: 'sv-key', upstream_model: 'saaras:v3' },
      ]),
    );
    await put('stt-deepgram', stt([{ provider: 'deepgram', base_url: deepgram.url, api_key: 'dg-key', upstream_model: 'nova-3' }]));
    const s = await signup(gw.url);
    session = s.token;
    key = (await createKey(gw.url, s.token)).api_key;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
  });
  after(async () => {
    await gw?.destroy();
    await sarvam?.close();
    await deepgram?.close();
  });

  const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: session })).body.balance_microcents as number;
  async function runJob(fields: Record<string, string>, seconds: number) {
    const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', { token: key, ...multipartForm(fields, wavBytes(seconds)) });
    assert.equal(created.status, 202, created.text);
    let job: any;
    const until = Date.now() + 20_000;
    do {
      await new Promise((r) => setTimeout(r, 100));
      job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${created.body.id}`, { token: key })).body;
    } while ((job.status === 'queued' || job.status === 'processing') && Date.now() < until);
    return job;
  }

  it('Sarvam: submitted once, polled to completion, speakers renamed, charged once by decoded seconds', async () => {
    sarvam.pollsUntilDone = 2;
    const before = await balance();
    const startsBefore = sarvam.jobs.size;
    const job = await runJob({ model: 'stt-sarvam', language_code: 'or-IN', num_speakers: '2' }, 7.2);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.equal(job.language, 'or-IN');
    const mine = [...sarvam.jobs.values()].slice(startsBefore);
    assert.equal(mine.length, 1, 'one provider job');
    assert.equal(mine[0]!.uploads, 1, 'the audio uploaded once');
    assert.equal(mine[0]!.starts, 1);
    assert.equal(mine[0]!.parameters.language_code, 'od-IN');
    assert.equal(mine[0]!.parameters.with_diarization, true);
    assert.deepEqual(
      job.segments.map((s: any) => s.speaker),
      ['SPEAKER_00', 'SPEAKER_01', 'SPEAKER_00'],
    );
    await new Promise((r) => setTimeout(r, 150));
    // 7.2 s → 8 billed seconds at 0.6 cent a minute = 0.08 cent = 80,000 µ¢.
    assert.equal(before - (await balance()), 80_000);
  });

  it('a route that cannot take the job fails over to the next before any result', async () => {
    const job = await runJob({ model: 'stt-failover' }, 3);
    assert.equal(job.status, 'completed', JSON.stringify(job));
  });

  it("a provider's failure fails the job, free of charge", async () => {
    sarvam.failNextJob = { level: 'job', message: 'audio corrupted' };
    const before = await balance();
    const job = await runJob({ model: 'stt-sarvam' }, 3);
    assert.equal(job.status, 'failed');
    assert.equal(job.error.code, 'upstream_error');
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(await balance(), before);
  });

  it('Deepgram: the result arrives by callback with the job token, integer speakers renamed', async () => {
    const before = await balance();
    const job = await runJob({ model: 'stt-deepgram' }, 6);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.equal(deepgram.callbacks.length >= 1, true);
    assert.deepEqual([...new Set(job.segments.map((s: any) => s.speaker))], ['SPEAKER_00', 'SPEAKER_01']);
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(before - (await balance()), 60_000);
  });

  it('a callback without the job token is not believed', async () => {
    const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', { token: key, ...multipartForm({ model: 'stt-sarvam' }, wavBytes(2)) });
    const forged = await call(gw.url, 'POST', `/v1/audio/transcriptions/jobs/${created.body.id}/callback/sarvam`, {
      body: { job_id: 'whatever', job_state: 'Completed' },
      headers: { 'x-sarvam-job-callback-token': 'guess' },
    });
    assert.equal(forged.status, 404);
  });
});
