// Sarvam against its fake over loopback: the REST transcription (Odia as od-IN, modes, chunk
// timestamps, the 30 s limit) and the batch job API (create, upload to storage once, start, poll,
// download; diarized speakers as Sarvam labels them; the callback and its token; failures).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createSarvamProvider } from '../../src/providers/sarvam/index.ts';
import { toSarvamLanguage } from '../../src/providers/sarvam/languages.ts';
import { handedOutUrl } from '../../src/providers/upload.ts';
import { UpstreamHttp } from '../../src/providers/http.ts';
import type { JobPoll } from '../../src/providers/types.ts';
import { startSarvamUpstream } from '../fakes/sarvam-upstream.ts';
import { readForm } from '../fakes/audio.ts';
import { never, routeTo, until, upstreamFailure } from './helpers.ts';
import { sttHarness } from './stt-harness.ts';

const KEY = 'sarvam-key-0123456789';

describe('Sarvam', () => {
  const h = sttHarness(
    () => startSarvamUpstream({ apiKey: KEY }),
    (files) => createSarvamProvider(files, new UpstreamHttp()),
  );

  const route = (overrides = {}) => routeTo(h.up, { provider: 'sarvam', apiKey: KEY, upstreamModel: 'saaras:v3', ...overrides });

  describe('speech-to-text (REST, ≤ 30 s)', () => {
    it('key terms go to saaras:v4 as repeated keyterms fields, the first 50; saaras:v3 gets none', async () => {
      const keyTerms = Array.from({ length: 60 }, (_, i) => `term${i}`);
      await h.stt.transcribe(route({ upstreamModel: 'saaras:v4' }), h.request(2, { language: 'hi-IN', context: { keyTerms } }), never);
      const rec = h.up.requests.at(-1)!;
      assert.deepEqual((await readForm(rec.raw, rec.headers['content-type']))!.fields.get('keyterms'), keyTerms.slice(0, 50));
      await h.stt.transcribe(route(), h.request(2, { language: 'hi-IN', context: { keyTerms } }), never);
      const v3 = h.up.requests.at(-1)!;
      assert.equal((await readForm(v3.raw, v3.headers['content-type']))!.fields.get('keyterms'), undefined);
    });

    it('sends Odia as od-IN with the mode and timestamps, and reads chunks back as segments in or-IN', async () => {
      const req = h.request(6, { language: 'or-IN' });
      const t = await h.stt.transcribe(route(), req, never);
      const rec = h.up.requests.at(-1)!;
      assert.equal(rec.path, '/speech-to-text');
      assert.equal(rec.headers['api-subscription-key'], KEY);
      const form = (await readForm(rec.raw, rec.headers['content-type']))!;
      assert.deepEqual(Object.fromEntries(form.fields), { model: ['saaras:v3'], mode: ['transcribe'], language_code: ['od-IN'], with_timestamps: ['true'] });
      assert.equal(form.file!.name, 'audio.wav');
      assert.ok(form.file!.bytes.equals(readFileSync(req.audio.path)));
      assert.equal(t.language, 'or-IN');
      assert.equal(t.duration, null);
      assert.deepEqual(
        t.segments.map((s) => [s.start, s.end]),
        [
          [0, 2.5],
          [2.5, 5],
          [5, 6],
        ],
      );
      assert.equal(t.segments[2]!.text, `part 3 of ${req.audio.bytes} bytes`);
    });

    it("audio held in memory (a realtime utterance) is the form's file, with no file read", async () => {
      const req = h.request(2);
      const data = readFileSync(req.audio.path);
      await h.stt.transcribe(route(), { ...req, audio: { ...req.audio, path: '', data } }, never);
      const rec = h.up.requests.at(-1)!;
      const form = (await readForm(rec.raw, rec.headers['content-type']))!;
      assert.ok(form.file!.bytes.equals(data));
    });

    it('asks Sarvam to detect the language when none is given, and takes both Odia spellings', async () => {
      const t = await h.stt.transcribe(route(), h.request(2, { timestamps: [] }), never);
      const form = (await readForm(h.up.requests.at(-1)!.raw, h.up.requests.at(-1)!.headers['content-type']))!;
      assert.deepEqual(form.fields.get('language_code'), ['unknown']);
      assert.deepEqual(form.fields.get('with_timestamps'), ['false']);
      assert.deepEqual(t.segments, []);
      assert.equal(t.language, 'hi-IN');
      assert.equal(toSarvamLanguage('od-IN'), 'od-IN');
      assert.equal(toSarvamLanguage('or'), 'od-IN');
      assert.equal(toSarvamLanguage('en-US'), 'en-IN');
      assert.equal(toSarvamLanguage('fr-FR'), null);
    });

    it('translates in translate mode (English out), and sends saarika models no mode', async () => {
      const t = await h.stt.transcribe(route(), h.request(2, { mode: 'translate', language: 'hi-IN' }), never);
      assert.equal(t.language, 'en');
      assert.match(t.text, /^translated part 1/);
      await h.stt.transcribe(route({ upstreamModel: 'saarika:v2.5' }), h.request(2), never);
      const form = (await readForm(h.up.requests.at(-1)!.raw, h.up.requests.at(-1)!.headers['content-type']))!;
      assert.equal(form.fields.get('mode'), undefined);
    });

    it('refuses audio over 30 s, languages Sarvam lacks, and modes saarika lacks, before any call', () => {
      const n = h.up.requests.length;
      assert.equal(h.stt.refuses!(h.request(31), route())?.param, 'file');
      assert.equal(h.stt.refuses!(h.request(1, { language: 'fr-FR' }), route())?.param, 'language_code');
      assert.equal(h.stt.refuses!(h.request(1, { mode: 'codemix' }), route({ upstreamModel: 'saarika:v2.5' }))?.param, 'mode');
      assert.equal(h.stt.refuses!(h.request(1, { mode: 'codemix' }), route()), undefined);
      assert.equal(h.up.requests.length, n);
    });

    it("classifies failures: a wrong key (403) is config, 5xx retryable, 400 the request's", async () => {
      const wrong = await upstreamFailure(h.stt.transcribe(route({ apiKey: 'not-the-key-000' }), h.request(1), never));
      assert.deepEqual([wrong.kind, wrong.status, wrong.upstreamMessage], ['config', 403, 'Invalid API key']);
      h.up.next({ status: 500 });
      const busy = await upstreamFailure(h.stt.transcribe(route(), h.request(1), never));
      assert.deepEqual([busy.kind, busy.retryable], ['http', true]);
      h.up.next({ status: 400, message: 'Invalid audio file' });
      const bad = await upstreamFailure(h.stt.transcribe(route(), h.request(1), never));
      assert.deepEqual([bad.kind, bad.retryable, bad.upstreamMessage], ['client', false, 'Invalid audio file']);
      const noKey = await upstreamFailure(h.stt.transcribe(route({ apiKey: '' }), h.request(1), never));
      assert.equal(noKey.kind, 'config');
    });

    it('the caller leaving aborts the call', async () => {
      h.up.next({ hang: true });
      const ac = new AbortController();
      const pending = h.stt.transcribe(route(), h.request(1), ac.signal);
      await until(() => h.up.active > 0);
      ac.abort();
      assert.equal((await upstreamFailure(pending)).kind, 'aborted');
    });
  });

  describe('batch jobs', () => {
    const pollUntilDone = async (id: string): Promise<JobPoll & { polls: number }> => {
      for (let polls = 1; polls < 20; polls++) {
        const p = await h.jobs!.poll(route(), id, never);
        if (p.state !== 'pending') return { ...p, polls };
      }
      throw new Error('the job never finished');
    };

    it('in two halves: create gives the id with nothing started; start again after a crash starts nothing twice', async () => {
      const req = h.request(3);
      const { providerJobId } = await h.jobs!.create!(route(), req, never);
      const job = h.up.jobs.get(providerJobId)!;
      assert.deepEqual([job.uploads, job.starts, job.state], [0, 0, 'Accepted']);
      await h.jobs!.start!(route(), providerJobId, req, never);
      await h.jobs!.start!(route(), providerJobId, req, never); // the replay of a step whose record was lost
      assert.deepEqual([job.uploads, job.starts], [1, 1]);
    });

    it("creates, uploads the audio once to storage, starts; polls to a diarized transcript with Sarvam's labels", async () => {
      h.up.pollsUntilDone = 2;
      const req = h.request(8, { language: 'or-IN', diarize: true, numSpeakers: 3 });
      const { providerJobId } = await h.jobs!.submit(route(), req, never);
      const job = h.up.jobs.get(providerJobId)!;
      assert.deepEqual(job.parameters, {
        model: 'saaras:v3',
        mode: 'transcribe',
        language_code: 'od-IN',
        with_timestamps: true,
        with_diarization: true,
        num_speakers: 3,
      });
      assert.equal(job.uploads, 1);
      assert.equal(job.starts, 1);
      assert.ok(job.file!.bytes.equals(readFileSync(req.audio.path)));
      const put = h.up.requests.find((r) => r.method === 'PUT')!;
      assert.equal(put.headers['x-ms-blob-type'], 'BlockBlob');
      assert.equal(put.headers['api-subscription-key'], undefined, 'the key never goes to storage');

      const done = await pollUntilDone(providerJobId);
      assert.equal(done.polls, 2, 'pending once, then completed');
      assert.equal(done.state, 'completed');
      const t = (done as Extract<JobPoll, { state: 'completed' }>).transcript;
      assert.equal(t.language, 'or-IN');
      assert.deepEqual(
        t.segments.map((s) => s.speaker),
        ['SPEAKER_00', 'SPEAKER_01', 'SPEAKER_02', 'SPEAKER_00'],
      );
      assert.deepEqual(
        t.segments.map((s) => [s.start, s.end]),
        [
          [0, 2.5],
          [2.5, 5],
          [5, 7.5],
          [7.5, 8],
        ],
      );
      h.up.pollsUntilDone = 1;
    });

    it('gives Sarvam the callback, whose POST carries the token in its header; the caller then polls', async () => {
      const { providerJobId } = await h.jobs!.submit(route(), h.request(3, { diarize: false }), never, {
        url: `${h.receiver.url}/callbacks/stt/j1`,
        token: 'cb-token-42',
      });
      assert.deepEqual(h.up.jobs.get(providerJobId)!.callback, { url: `${h.receiver.url}/callbacks/stt/j1`, auth_token: 'cb-token-42' });
      await until(() => h.receiver.requests.length > 0);
      const cb = h.receiver.requests[0]!;
      assert.equal(cb.path, '/callbacks/stt/j1');
      assert.deepEqual(h.jobs!.parseCallback!(cb.body, cb.headers), { providerJobId, token: 'cb-token-42' });
      const done = await h.jobs!.poll(route(), providerJobId, never);
      assert.equal(done.state, 'completed');
      assert.ok((done as Extract<JobPoll, { state: 'completed' }>).transcript.segments.every((s) => s.speaker === null || s.speaker === undefined));
      assert.equal(h.jobs!.parseCallback!({ hello: 1 }, {}), null);
    });

    it("reports a failed job, and a job whose file failed, with Sarvam's reason", async () => {
      h.up.failNextJob = { level: 'job', message: 'Audio could not be decoded' };
      const a = await h.jobs!.submit(route(), h.request(1), never);
      assert.deepEqual(await h.jobs!.poll(route(), a.providerJobId, never), { state: 'failed', message: 'Audio could not be decoded' });
      h.up.failNextJob = { level: 'file', message: 'Internal error on file' };
      const b = await h.jobs!.submit(route(), h.request(1), never);
      assert.deepEqual(await h.jobs!.poll(route(), b.providerJobId, never), { state: 'failed', message: 'Internal error on file' });
    });

    it('a failure before start leaves a job that never starts: a new submit starts exactly one job', async () => {
      const before = h.up.jobs.size;
      h.up.next({}, {}, {}, { status: 503 }); // create, upload-files, PUT, then start fails
      const err = await upstreamFailure(h.jobs!.submit(route(), h.request(1), never));
      assert.deepEqual([err.kind, err.retryable], ['http', true]);
      const { providerJobId } = await h.jobs!.submit(route(), h.request(1), never);
      const created = [...h.up.jobs.values()].slice(before);
      assert.equal(created.length, 2);
      assert.deepEqual(
        created.map((j) => j.starts),
        [0, 1],
      );
      assert.equal(created[1]!.id, providerJobId);
    });

    it('a storage failure is retryable and never shows the storage signature', async () => {
      h.up.next({}, {}, { status: 503 });
      const err = await upstreamFailure(h.jobs!.submit(route(), h.request(1), never));
      assert.deepEqual([err.kind, err.status], ['http', 503]);
      assert.doesNotMatch(`${err.message} ${err.upstreamMessage ?? ''}`, /SECRETSIGNATURE|127\.0\.0\.1/);
    });

    for (const origin of ['http://storage.example', 'https://127.0.0.1:1', 'https://[::ffff:7f00:1]', 'https://169.254.169.254', 'https://blob.internal']) {
      it(`refuses a storage URL at ${origin}: no audio is sent there, the job is not started`, async () => {
        h.up.blobOrigin = origin;
        try {
          const before = h.up.jobs.size;
          const err = await upstreamFailure(h.jobs!.submit(route(), h.request(1), never));
          assert.equal(err.kind, 'protocol');
          const job = [...h.up.jobs.values()].slice(before)[0]!;
          assert.deepEqual([job.uploads, job.starts], [0, 0]);
        } finally {
          h.up.blobOrigin = null;
        }
      });
    }

    it("accepts a storage URL on the route's own origin or over https to a public host", () => {
      const base = 'http://10.0.0.5:8080';
      assert.equal(handedOutUrl(base, 'http://10.0.0.5:8080/blob/x?sig=1')?.pathname, '/blob/x');
      assert.equal(handedOutUrl(base, 'https://sarvam.blob.core.windows.net/c/a.wav?sig=1')?.host, 'sarvam.blob.core.windows.net');
      assert.equal(handedOutUrl(base, 'https://user:pw@sarvam.blob.core.windows.net/c'), null);
      assert.equal(handedOutUrl(base, 42), null);
    });
  });
});
