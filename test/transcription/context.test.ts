// A transcription's context through a real gateway to the providers' fakes: the client's `prompt`
// and key terms (`key_terms[]`, the gateway's extension) on the sync endpoint, translations and
// jobs, sent as each upstream takes them (Deepgram's `keyterm` for Nova-3 and `keywords` before it,
// Sarvam's `keyterms` for saaras:v4, OpenAI's `prompt` with the terms folded in), and the limits
// refused in the envelope naming the field.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { wavBytes, readForm } from '../fakes/audio.ts';
import { startDeepgramUpstream, type DeepgramUpstream } from '../fakes/deepgram-upstream.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { startSarvamUpstream, type SarvamUpstream } from '../fakes/sarvam-upstream.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { multipartForm } from './form.ts';

const stt = (routes: object[], more: object = {}) => ({
  type: 'stt',
  owned_by: 'acme',
  languages: ['en-IN', 'hi-IN'],
  modes: ['transcribe', 'translate'],
  pricing: { cents_per_minute: 0.6 },
  routes,
  ...more,
});

describe('a transcription’s context (prompt, key_terms[]) reaches the upstreams', () => {
  let gw: TestGateway;
  let deepgram: DeepgramUpstream;
  let sarvam: SarvamUpstream;
  let openai: FakeServer;
  let key: string;

  before(async () => {
    deepgram = await startDeepgramUpstream({ apiKey: 'dg-key' });
    sarvam = await startSarvamUpstream({ apiKey: 'sv-key' });
    openai = await startOpenAIUpstream({ apiKey: 'sk-up' });
    gw = await startTestGateway({ transcription: { retentionDays: 30, capacity: 8, pollMs: 100, maxPollMs: 400, maxJobHours: 24, publicUrl: '' } });
    const put = async (id: string, body: object) => {
      const res = await call(gw.url, 'PUT', `/admin/models/${id}`, { token: ADMIN_TOKEN, body });
      assert.ok(res.status < 300, res.text);
    };
    const dg = (model: string) => ({ provider: 'deepgram', base_url: deepgram.url, api_key: 'dg-key', upstream_model: model });
    await put('stt-nova3', stt([dg('nova-3')]));
    await put('stt-nova2', stt([dg('nova-2')]));
    const sv = (model: string) => ({ provider: 'sarvam', base_url: sarvam.url, api_key: 'sv-key', upstream_model: model });
    await put('stt-saaras4', stt([sv('saaras:v4')], { jobs: true, diarization: true }));
    await put('stt-saaras3', stt([sv('saaras:v3')]));
    await put('stt-whisper', stt([{ provider: 'openai', base_url: `${openai.url}/v1`, api_key: 'sk-up', upstream_model: 'whisper-1' }]));
    const s = await signup(gw.url);
    key = (await createKey(gw.url, s.token)).api_key;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
  });
  after(async () => {
    await gw?.destroy();
    await Promise.all([deepgram?.close(), sarvam?.close(), openai?.close()]);
  });

  const post = (path: string, fields: Record<string, string | string[]>, seconds = 2) =>
    call(gw.url, 'POST', path, { token: key, ...multipartForm(fields, wavBytes(seconds)) });
  const transcribe = (fields: Record<string, string | string[]>) => post('/v1/audio/transcriptions', fields);
  const lastQuery = () => new URLSearchParams(deepgram.requests.at(-1)!.query);
  const lastForm = async (up: FakeServer) => {
    const rec = up.requests.at(-1)!;
    return (await readForm(rec.raw, rec.headers['content-type']))!.fields;
  };

  it("Deepgram Nova-3 gets each key term as a `keyterm` (a phrase whole), in the client's order", async () => {
    const res = await transcribe({ model: 'stt-nova3', prompt: 'Was the amount debited?', 'key_terms[]': ['debited', 'ATM', 'two thousand rupees'] });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(lastQuery().getAll('keyterm'), ['debited', 'ATM', 'two thousand rupees']);
    assert.deepEqual(lastQuery().getAll('keywords'), []);
  });

  it('Deepgram before Nova-3 gets `keywords`, one word each (its keywords are single words)', async () => {
    const res = await transcribe({ model: 'stt-nova2', key_terms: ['debited', 'ATM card'] });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(lastQuery().getAll('keywords'), ['debited', 'ATM', 'card']);
    assert.deepEqual(lastQuery().getAll('keyterm'), []);
  });

  it('Sarvam saaras:v4 gets `keyterms` (one form field per term); saaras:v3, which takes none, is sent none', async () => {
    const res = await transcribe({ model: 'stt-saaras4', language_code: 'hi-IN', 'key_terms[]': ['UPI', 'khata'] });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((await lastForm(sarvam)).get('keyterms'), ['UPI', 'khata']);
    const v3 = await transcribe({ model: 'stt-saaras3', language_code: 'hi-IN', 'key_terms[]': ['UPI'] });
    assert.equal(v3.status, 200, v3.text);
    assert.equal((await lastForm(sarvam)).get('keyterms'), undefined);
  });

  it('OpenAI gets the prompt with the key terms after it, on transcriptions and translations', async () => {
    const res = await transcribe({ model: 'stt-whisper', prompt: 'Is this about your bank account?', 'key_terms[]': ['ATM', 'debited'] });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual((await lastForm(openai)).get('prompt'), ['Is this about your bank account?\nATM, debited']);
    const translated = await post('/v1/audio/translations', { model: 'stt-whisper', 'key_terms[]': ['Dashwood'] });
    assert.equal(translated.status, 200, translated.text);
    assert.equal(openai.requests.at(-1)!.path, '/v1/audio/translations');
    assert.deepEqual((await lastForm(openai)).get('prompt'), ['Dashwood']);
  });

  it("a job keeps its key terms to the provider's job (Sarvam's job_parameters.keyterms)", async () => {
    const created = await post('/v1/audio/transcriptions/jobs', { model: 'stt-saaras4', language_code: 'hi-IN', 'key_terms[]': ['NEFT', 'IFSC'] }, 3);
    assert.equal(created.status, 202, created.text);
    const until = Date.now() + 20_000;
    let job: any;
    do {
      await new Promise((r) => setTimeout(r, 100));
      job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${created.body.id}`, { token: key })).body;
    } while ((job.status === 'queued' || job.status === 'processing') && Date.now() < until);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    const submitted = [...sarvam.jobs.values()].at(-1)!;
    assert.deepEqual(submitted.parameters.keyterms, ['NEFT', 'IFSC']);
  });

  it('refuses key terms past the limits in the envelope, naming the field and the term', async () => {
    const many = await transcribe({ model: 'stt-nova3', 'key_terms[]': Array.from({ length: 101 }, (_, i) => `term${i}`) });
    assert.equal(many.status, 400);
    assert.equal(many.body.error.code, 'invalid_request');
    assert.equal(many.body.error.param, 'key_terms[]');
    assert.match(many.body.error.message, /at most 100 key terms/);
    const flood = await transcribe({ model: 'stt-nova3', 'key_terms[]': Array.from({ length: 200 }, (_, i) => `term${i}`) });
    assert.equal(flood.status, 400);
    assert.match(flood.body.error.message, /more than \d+ fields/);
    const long = await transcribe({ model: 'stt-nova3', key_terms: ['ok', 'x'.repeat(51)] });
    assert.equal(long.status, 400);
    assert.equal(long.body.error.param, 'key_terms');
    assert.match(long.body.error.message, /at most 50 characters \(term 2\)/);
    const empty = await post('/v1/audio/translations', { model: 'stt-whisper', 'key_terms[]': ['  '] });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.error.param, 'key_terms[]');
    const control = await post('/v1/audio/transcriptions/jobs', { model: 'stt-saaras4', 'key_terms[]': ['a\u0007b'] });
    assert.equal(control.status, 400);
    assert.equal(control.body.error.param, 'key_terms[]');
  });
});
