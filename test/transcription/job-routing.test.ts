// Job submissions go through the router's one failover policy, as requests do: a route's
// `max_concurrent` bounds the jobs it runs at once (the others wait for a slot, they do not fail),
// and a route in cool-down after failing is skipped by the next submissions (on d9a440b jobs called
// providers directly: neither held). Through a real gateway against fake OpenAI audio upstreams.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { wavBytes } from '../fakes/audio.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { multipartForm } from './form.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

const TRANSCRIPTIONS = '/v1/audio/transcriptions';

describe('job submissions follow the router’s policy', () => {
  let gw: TestGateway;
  let slow: FakeServer;
  let broken: FakeServer;
  let healthy: FakeServer;
  let key: string;

  const route = (server: FakeServer, extra: object = {}) => ({
    provider: 'openai',
    base_url: `${server.url}/v1`,
    api_key: 'sk-up',
    upstream_model: 'whisper-1',
    ...extra,
  });
  const stt = (routes: object[]) => ({
    type: 'stt',
    owned_by: 'acme',
    languages: ['en-US'],
    modes: ['transcribe'],
    jobs: true,
    diarization: true,
    pricing: { cents_per_minute: 0.6 },
    routes,
  });

  before(async () => {
    [slow, broken, healthy] = await Promise.all([
      startOpenAIUpstream({ apiKey: 'sk-up' }),
      startOpenAIUpstream({ apiKey: 'sk-up' }),
      startOpenAIUpstream({ apiKey: 'sk-up' }),
    ]);
    slow.defaultBehaviour = { delayMs: 250 };
    broken.defaultBehaviour = { status: 503 };
    gw = await startTestGateway({ transcription: { pollMs: 100 } });
    const put = async (id: string, body: object) => {
      const res = await call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
      assert.ok(res.status < 300, res.text);
    };
    await put('stt-one-at-a-time', stt([route(slow, { max_concurrent: 1 })]));
    await put('stt-flaky-first', stt([route(broken), route(healthy)]));
    const s = await signup(gw.url);
    key = (await createKey(gw.url, s.token)).api_key;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
  });
  after(async () => {
    await gw?.destroy();
    await Promise.all([slow, broken, healthy].map((f) => f?.close()));
  });

  async function submit(model: string): Promise<string> {
    const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', { token: key, ...multipartForm({ model, diarize: 'false' }, wavBytes(2)) });
    assert.equal(created.status, 202, created.text);
    return created.body.id;
  }
  async function finished(id: string): Promise<any> {
    for (const until = Date.now() + 30_000; Date.now() < until; ) {
      const job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${id}`, { token: key })).body;
      if (job.status === 'completed' || job.status === 'failed') return job;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`job ${id} did not finish`);
  }

  it("a route's max_concurrent bounds the jobs it runs at once; the rest wait and complete", async () => {
    const ids = await Promise.all([1, 2, 3, 4].map(() => submit('stt-one-at-a-time')));
    const jobs = await Promise.all(ids.map(finished));
    assert.deepEqual(
      jobs.map((j) => j.status),
      ['completed', 'completed', 'completed', 'completed'],
    );
    assert.equal(slow.calls(TRANSCRIPTIONS).length, 4);
    assert.equal(slow.maxActive, 1, 'never two at once on the route');
  });

  it('a route that keeps failing cools down and later submissions skip it', async () => {
    // The router's threshold is 3 consecutive failures: three jobs each try the broken route first.
    for (let i = 0; i < 3; i++) assert.equal((await finished(await submit('stt-flaky-first'))).status, 'completed');
    assert.equal(broken.calls(TRANSCRIPTIONS).length, 3);
    for (let i = 0; i < 2; i++) assert.equal((await finished(await submit('stt-flaky-first'))).status, 'completed');
    assert.equal(broken.calls(TRANSCRIPTIONS).length, 3, 'the cooling route was not called again');
    assert.equal(healthy.calls(TRANSCRIPTIONS).length, 5);
  });
});
