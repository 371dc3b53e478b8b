// A batch of jobs larger than one instance's capacity: every job completes and is charged once.
// More jobs than the capacity wait, queued, and are claimed as running ones finish; several claim
// passes run at once then (one per finished job, plus the sweep), and an instance must never "take
// over" a job it is already running (on d9a440b that re-grab bumped the lease's epoch, which
// aborted the job's own in-flight work: 7 to 11 of 20 jobs ended `failed`, some with no usage
// record and no `transcription.failed` event).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { wavBytes } from '../fakes/audio.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { storedUsage } from '../billing/crash-helpers.ts';
import { multipartForm } from './form.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

const JOBS = 24;
const CAPACITY = 8;

describe('a batch of jobs past one instance’s capacity', () => {
  let gw: TestGateway;
  let upstream: FakeServer;
  let key: string;
  let session: string;

  before(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
    // Each transcription takes a while upstream, so jobs overlap and finish while others queue.
    upstream.defaultBehaviour = { delayMs: 60 };
    gw = await startTestGateway({ transcription: { retentionDays: 30, capacity: CAPACITY, pollMs: 100, maxPollMs: 400, maxJobHours: 24, publicUrl: '' } });
    const model = {
      type: 'stt',
      owned_by: 'acme',
      languages: ['en-US'],
      modes: ['transcribe'],
      jobs: true,
      diarization: true,
      pricing: { cents_per_minute: 0.6 },
      routes: [{ provider: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-up', upstream_model: 'whisper-1' }],
    };
    const put = await call(gw.url, 'PUT', '/admin/models/stt-batch', { token: ADMIN_TOKEN, body: model });
    assert.ok(put.status < 300, put.text);
    const s = await signup(gw.url);
    session = s.token;
    key = (await createKey(gw.url, s.token)).api_key;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
  });
  after(async () => {
    await gw?.destroy();
    await upstream?.close();
  });

  it(`${JOBS} jobs on one instance with capacity ${CAPACITY}: all complete, each charged once`, async () => {
    const before = (await storedUsage(gw.url, session)).wallet.balance_microcents;
    const audio = wavBytes(3);
    const ids = await Promise.all(
      Array.from({ length: JOBS }, async () => {
        const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', {
          token: key,
          ...multipartForm({ model: 'stt-batch', diarize: 'false' }, audio),
        });
        assert.equal(created.status, 202, created.text);
        return created.body.id as string;
      }),
    );
    const jobs = new Map<string, any>();
    const until = Date.now() + 90_000;
    while (jobs.size < JOBS && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 200));
      for (const id of ids) {
        if (jobs.has(id)) continue;
        const job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${id}`, { token: key })).body;
        if (job.status === 'completed' || job.status === 'failed') jobs.set(id, job);
      }
    }
    const failed = [...jobs.values()].filter((j) => j.status !== 'completed');
    assert.deepEqual(
      failed.map((j) => j.error),
      [],
      'no job fails',
    );
    assert.equal(jobs.size, JOBS, 'every job ended');
    // 3 s at 0.6 cent a minute = 0.03 cent = 30,000 µ¢, once per job.
    await new Promise((r) => setTimeout(r, 300));
    const usage = await storedUsage(gw.url, session);
    const records = (await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token: session })).body.data as {
      request_id: string;
      cost_microcents: number;
    }[];
    const perJob = new Map<string, number>();
    for (const r of records) perJob.set(r.request_id, (perJob.get(r.request_id) ?? 0) + 1);
    assert.deepEqual(
      ids.filter((id) => perJob.get(id) !== 1),
      [],
      'one usage record per job',
    );
    assert.equal(usage.count, JOBS);
    assert.equal(usage.cost, JOBS * 30_000);
    assert.equal(before - usage.wallet.balance_microcents, JOBS * 30_000);
    assert.equal(upstream.requests.filter((r) => r.path === '/v1/audio/transcriptions').length, JOBS, 'each recording transcribed once');
  });
});
