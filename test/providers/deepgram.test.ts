// Deepgram against its fake over loopback: the pre-recorded request (query, key, the audio as the
// body), its answer (utterances as segments, integer speakers as Deepgram gives them, words), the
// language mapping, failures classified, and callback jobs (submitted once, the result and its
// secret read from the callback body; no polling).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createDeepgramProvider } from '../../src/providers/deepgram/index.ts';
import { deepgramLanguage, deepgramTerms, parseDeepgram } from '../../src/providers/deepgram/transcribe.ts';
import type { JobPoll } from '../../src/providers/types.ts';
import { startDeepgramUpstream } from '../fakes/deepgram-upstream.ts';
import { never, routeTo, until, upstreamFailure } from './helpers.ts';
import { sttHarness } from './stt-harness.ts';

const KEY = 'dg-key-0123456789';

describe('Deepgram', () => {
  const h = sttHarness(() => startDeepgramUpstream({ apiKey: KEY }), createDeepgramProvider);

  const route = (overrides = {}) => routeTo(h.up, { provider: 'deepgram', apiKey: KEY, upstreamModel: 'nova-3', ...overrides });
  const query = () => Object.fromEntries(new URLSearchParams(h.up.requests.at(-1)!.query));

  it("posts the audio as the body with the key and query, and reads utterances with Deepgram's integer speakers", async () => {
    const req = h.request(6, { language: 'en-IN', diarize: true, timestamps: ['segment', 'word'] });
    const t = await h.stt.transcribe(route(), req, never);
    const rec = h.up.requests.at(-1)!;
    assert.equal(rec.path, '/v1/listen');
    assert.equal(rec.headers.authorization, `Token ${KEY}`);
    assert.equal(rec.headers['content-type'], 'audio/wav');
    assert.equal(Number(rec.headers['content-length']), req.audio.bytes);
    assert.ok(rec.raw.equals(readFileSync(req.audio.path)));
    assert.deepEqual(query(), { model: 'nova-3', punctuate: 'true', utterances: 'true', diarize: 'true', language: 'en-IN' });

    const n = req.audio.bytes;
    assert.equal(t.text, `Part 1 of ${n} bytes. Part 2 of ${n} bytes. Part 3 of ${n} bytes.`);
    assert.equal(t.language, 'en-IN');
    assert.equal(t.duration, 6);
    assert.deepEqual(
      t.segments.map((s) => [s.start, s.end, s.speaker]),
      [
        [0, 2.5, 0],
        [2.5, 5, 1],
        [5, 6, 0],
      ],
    );
    assert.equal(t.segments[1]!.text, `Part 2 of ${n} bytes.`);
    assert.deepEqual(t.segments[1]!.words![0], { word: 'Part', start: 2.5, end: 3, speaker: 1 });
  });

  it('audio held in memory (a realtime utterance) is the body, with no file read', async () => {
    const req = h.request(2);
    const data = readFileSync(req.audio.path);
    await h.stt.transcribe(route(), { ...req, audio: { ...req.audio, path: '', data } }, never);
    const rec = h.up.requests.at(-1)!;
    assert.equal(Number(rec.headers['content-length']), data.length);
    assert.ok(rec.raw.equals(data));
  });

  it("key terms: Nova-3's keyterm per term within Deepgram's 500-token budget; keywords one word each before it", () => {
    const long = Array.from({ length: 100 }, (_, i) => `${'x'.repeat(45)}${String(i).padStart(3, '0')}`); // 48 characters: 16 tokens each
    const sent = deepgramTerms('nova-3-general', long);
    assert.equal(sent.length, 31, '31 × 16 = 496 tokens; the 32nd would pass 500');
    assert.deepEqual(sent[0], ['keyterm', long[0]]);
    assert.deepEqual(deepgramTerms('nova-2', ['ATM card', 'card', "o'clock"]), [
      ['keywords', 'ATM'],
      ['keywords', 'card'],
      ['keywords', "o'clock"],
    ]);
    assert.deepEqual(deepgramTerms('nova-3', []), []);
  });

  it('sends a language by its code (English regions kept), or asks Deepgram to detect it', async () => {
    assert.equal(deepgramLanguage('hi-IN'), 'hi');
    assert.equal(deepgramLanguage('en-gb'), 'en-GB');
    assert.equal(deepgramLanguage('ta'), 'ta');
    const hindi = await h.stt.transcribe(route(), h.request(2, { language: 'hi-IN' }), never);
    assert.equal(query().language, 'hi');
    assert.equal(hindi.language, 'hi-IN');
    const detected = await h.stt.transcribe(route(), h.request(2), never);
    assert.deepEqual(query(), { model: 'nova-3', punctuate: 'true', utterances: 'true', detect_language: 'true' });
    assert.equal(detected.language, 'en');
    assert.equal(detected.segments[0]!.speaker, undefined, 'no speakers without diarization');
    assert.equal(detected.segments[0]!.words, undefined, 'no words unless asked');
  });

  it('makes segments from words at each change of speaker when there are no utterances', () => {
    const w = (word: string, start: number, speaker: number) => ({ word, punctuated_word: word, start, end: start + 0.5, speaker });
    const body = {
      metadata: { request_id: 'r', duration: 3 },
      results: { channels: [{ alternatives: [{ transcript: 'a b c', words: [w('a', 0, 1), w('b', 0.5, 1), w('c', 2, 0)] }] }] },
    };
    const t = parseDeepgram('m#0', { timestamps: ['segment'] }, body);
    assert.deepEqual(t.segments, [
      { start: 0, end: 1, text: 'a b', speaker: 1 },
      { start: 2, end: 2.5, text: 'c', speaker: 0 },
    ]);
  });

  it('only transcribes: other modes are refused before any call', () => {
    assert.equal(h.stt.refuses!(h.request(1, { mode: 'translate' }), route())?.param, 'mode');
    assert.equal(h.stt.refuses!(h.request(1), route()), undefined);
  });

  it("classifies failures with Deepgram's err_msg: a wrong key is config, 5xx retryable, 400 the request's", async () => {
    const wrong = await upstreamFailure(h.stt.transcribe(route({ apiKey: 'dg-wrong-000000' }), h.request(1), never));
    assert.deepEqual([wrong.kind, wrong.status, wrong.upstreamMessage], ['config', 401, 'Invalid credentials.']);
    h.up.next({ status: 503 });
    const busy = await upstreamFailure(h.stt.transcribe(route(), h.request(1), never));
    assert.deepEqual([busy.kind, busy.retryable], ['http', true]);
    const bad = await upstreamFailure(h.stt.transcribe(route({ upstreamModel: 'nova-9' }), h.request(1), never));
    assert.deepEqual([bad.kind, bad.status, bad.upstreamMessage], ['client', 400, 'No such model/language/tier combination found.']);
  });

  it('the caller leaving aborts the upload', async () => {
    h.up.next({ hang: true });
    const ac = new AbortController();
    const pending = h.stt.transcribe(route(), h.request(2), ac.signal);
    await until(() => h.up.active > 0);
    const rec = h.up.requests.at(-1)!;
    ac.abort();
    assert.equal((await upstreamFailure(pending)).kind, 'aborted');
    await rec.ended;
    assert.equal(rec.closedEarly, true);
  });

  describe('callback jobs', () => {
    it('submits the audio once with the callback and its secret; the callback body carries both and the result', async () => {
      const before = h.up.requests.length;
      const req = h.request(5, { diarize: true, numSpeakers: 2 });
      const { providerJobId } = await h.jobs!.submit(route(), req, never, { url: `${h.receiver.url}/callbacks/stt/j7`, token: 'secret-token-7' });
      assert.equal(h.up.requests.length - before, 1, 'the audio went up once');
      const q = query();
      assert.equal(q.callback, `${h.receiver.url}/callbacks/stt/j7`);
      assert.equal(q.extra, 'callback_secret:secret-token-7');
      assert.equal(q.diarize, 'true');
      assert.deepEqual(await h.jobs!.poll(route(), providerJobId, never), { state: 'pending' });

      await until(() => h.receiver.requests.length > 0);
      const cb = h.receiver.requests.at(-1)!;
      assert.equal(cb.path, '/callbacks/stt/j7');
      const parsed = h.jobs!.parseCallback!(cb.body, cb.headers)!;
      assert.equal(parsed.providerJobId, providerJobId);
      assert.equal(parsed.token, 'secret-token-7');
      const result = parsed.result as Extract<JobPoll, { state: 'completed' }>;
      assert.equal(result.state, 'completed');
      assert.deepEqual(
        result.transcript.segments.map((s) => s.speaker),
        [0, 1],
      );
      assert.equal(result.transcript.duration, 5);
    });

    it('a job Deepgram fails comes back failed, with its reason', async () => {
      h.up.failNextJob = 'Audio could not be transcribed';
      const count = h.receiver.requests.length;
      const { providerJobId } = await h.jobs!.submit(route(), h.request(1), never, { url: `${h.receiver.url}/cb`, token: 't' });
      await until(() => h.receiver.requests.length > count);
      const cb = h.receiver.requests.at(-1)!;
      assert.deepEqual(h.jobs!.parseCallback!(cb.body, cb.headers), {
        providerJobId,
        token: 't',
        result: { state: 'failed', message: 'Audio could not be transcribed' },
      });
      assert.equal(h.jobs!.parseCallback!({ results: {} }, {}), null);
    });

    it('without a callback URL a job cannot run at Deepgram: misconfigured, nothing sent', async () => {
      const before = h.up.requests.length;
      const err = await upstreamFailure(h.jobs!.submit(route(), h.request(1), never));
      assert.equal(err.kind, 'config');
      assert.equal(h.up.requests.length, before);
    });
  });
});
