// Speech-to-text through the OpenAI-compatible provider against the fake upstream, over loopback:
// the multipart it sends (fields, the file under a safe name, streamed with an exact length), the
// format it asks for each model, what it makes of the answers, refusals, and failures classified.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { audioFormatOf, openaiTranscribe } from '../../src/providers/openai/transcribe.ts';
import { whisperLanguageCode } from '../../src/providers/openai/languages.ts';
import { whisperDecoderOf } from '../../src/providers/transcript.ts';
import type { TranscribeRequest } from '../../src/providers/types.ts';
import { startOpenAIUpstream } from '../fakes/openai-upstream.ts';
import { readForm } from '../fakes/audio.ts';
import { never, routeTo, until, upstreamFailure } from './helpers.ts';
import { sttHarness } from './stt-harness.ts';

const KEY = 'sk-up-0123456789';

describe('OpenAI-compatible speech-to-text', () => {
  const h = sttHarness(
    () => startOpenAIUpstream({ apiKey: KEY, models: ['whisper-1', 'gpt-4o-transcribe', 'gpt-4o-transcribe-diarize', 'gpt-transcribe'] }),
    (files) => ({ name: 'openai', transcribe: openaiTranscribe(files) }),
  );

  const route = (model: string, overrides = {}) => routeTo(h.up, { apiKey: KEY, upstreamModel: model, ...overrides });
  const lastForm = async () => {
    const rec = h.up.requests.at(-1)!;
    return { rec, form: (await readForm(rec.raw, rec.headers['content-type']))! };
  };

  it('sends whisper-1 a verbose_json form with the ISO language, and reads segments, words and the language', async () => {
    const req = h.request(6, { language: 'hi-IN', context: { prompt: 'a call' }, temperature: 0.2, timestamps: ['segment', 'word'] });
    const t = await h.stt.transcribe(route('whisper-1'), req, never);
    const { rec, form } = await lastForm();
    assert.equal(rec.path, '/v1/audio/transcriptions');
    assert.equal(rec.headers.authorization, `Bearer ${KEY}`);
    assert.deepEqual(Object.fromEntries(form.fields), {
      model: ['whisper-1'],
      response_format: ['verbose_json'],
      language: ['hi'],
      prompt: ['a call'],
      temperature: ['0.2'],
      'timestamp_granularities[]': ['segment', 'word'],
    });
    // The client's file name never goes upstream; the bytes are the file's, with an exact length.
    assert.equal(form.file!.name, 'audio.wav');
    assert.equal(form.file!.type, 'audio/wav');
    assert.ok(form.file!.bytes.equals(readFileSync(req.audio.path)));
    assert.equal(Number(rec.headers['content-length']), rec.raw.length);
    assert.equal(rec.headers['transfer-encoding'], undefined);

    const bytes = req.audio.bytes;
    assert.equal(t.text, `part 1 of ${bytes} bytes part 2 of ${bytes} bytes part 3 of ${bytes} bytes`);
    assert.equal(t.language, 'hi-IN');
    assert.equal(t.duration, 6);
    assert.deepEqual(
      t.segments.map((s) => [s.start, s.end, s.text]),
      [
        [0, 2.5, `part 1 of ${bytes} bytes`],
        [2.5, 5, `part 2 of ${bytes} bytes`],
        [5, 6, `part 3 of ${bytes} bytes`],
      ],
    );
    assert.deepEqual(
      t.segments.map((s) => s.words!.map((w) => w.word).join(' ')),
      t.segments.map((s) => s.text),
    );
    assert.deepEqual(t.segments[1]!.words![0], { word: 'part', start: 2.5, end: 3 });
    assert.deepEqual(t.segments[0]!.decoder, { tokens: [50364, 440], avg_logprob: -0.25, no_speech_prob: 0.01 }, "Whisper's decoder fields, as given");
  });

  it("keeps each of a segment's decoder fields only when well-formed", () => {
    assert.deepEqual(whisperDecoderOf({ tokens: [1, 2], avg_logprob: -0.3, no_speech_prob: 0.2 }), { tokens: [1, 2], avg_logprob: -0.3, no_speech_prob: 0.2 });
    assert.deepEqual(whisperDecoderOf({ tokens: [1, -2], avg_logprob: 0.5, no_speech_prob: 0.2 }), { no_speech_prob: 0.2 });
    assert.deepEqual(whisperDecoderOf({ tokens: 'x', avg_logprob: Number.NaN, no_speech_prob: 2 }), undefined);
    assert.deepEqual(whisperDecoderOf({ tokens: Array.from({ length: 2000 }, () => 1) }), undefined, 'no segment holds 2,000 tokens');
  });

  it('asks only for segments when words are not wanted, and names a detected language by its code', async () => {
    const t = await h.stt.transcribe(route('whisper-1'), h.request(3, { timestamps: [] }), never);
    const { form } = await lastForm();
    assert.deepEqual(form.fields.get('timestamp_granularities[]'), ['segment']);
    assert.equal(form.fields.get('language'), undefined);
    assert.equal(t.language, 'en');
    assert.equal(t.segments[0]!.words, undefined);
  });

  it('asks gpt-4o-transcribe for json (all it gives): text, no segments, the asked language', async () => {
    const t = await h.stt.transcribe(route('gpt-4o-transcribe'), h.request(4, { language: 'ta-IN', timestamps: ['segment', 'word'] }), never);
    const { form } = await lastForm();
    assert.deepEqual(form.fields.get('response_format'), ['json']);
    assert.equal(form.fields.get('timestamp_granularities[]'), undefined);
    assert.match(t.text, /^part 1 of \d+ bytes part 2 of \d+ bytes$/);
    assert.deepEqual({ ...t, text: '' }, { text: '', language: 'ta-IN', duration: null, segments: [] });
  });

  it('asks a diarize model for diarized_json with chunking, keeping its speaker labels as they are', async () => {
    const t = await h.stt.transcribe(route('gpt-4o-transcribe-diarize'), h.request(40, { diarize: true }), never);
    const { form } = await lastForm();
    assert.deepEqual(form.fields.get('response_format'), ['diarized_json']);
    assert.deepEqual(form.fields.get('chunking_strategy'), ['auto']);
    assert.equal(t.segments.length, 16);
    assert.deepEqual(
      t.segments.slice(0, 3).map((s) => s.speaker),
      ['A', 'B', 'A'],
    );
    assert.equal(t.duration, 40);
  });

  it('translates through /audio/translations without a language, answering English', async () => {
    const t = await h.stt.transcribe(route('whisper-1'), h.request(3, { mode: 'translate', language: 'hi-IN' }), never);
    const { rec, form } = await lastForm();
    assert.equal(rec.path, '/v1/audio/translations');
    assert.equal(form.fields.get('language'), undefined);
    assert.equal(form.fields.get('timestamp_granularities[]'), undefined);
    assert.equal(t.language, 'en');
    assert.match(t.segments[0]!.text, /^translated part 1/);
  });

  it('key terms: gpt-transcribe takes them as keywords[], a diarizing model gets none (a hint, not refused), others read them in the prompt', async () => {
    const context = { prompt: 'Shall I raise a dispute?', keyTerms: ['yes', 'no', 'haan'] };
    await h.stt.transcribe(route('gpt-transcribe'), h.request(2, { context }), never);
    let { form } = await lastForm();
    assert.deepEqual(form.fields.get('prompt'), ['Shall I raise a dispute?']);
    assert.deepEqual(form.fields.get('keywords[]'), ['yes', 'no', 'haan']);
    assert.equal(h.stt.refuses!(h.request(1, { context: { keyTerms: ['ATM'] } }), route('gpt-4o-transcribe-diarize')), undefined);
    await h.stt.transcribe(route('gpt-4o-transcribe-diarize'), h.request(2, { context: { keyTerms: ['ATM'] } }), never);
    ({ form } = await lastForm());
    assert.equal(form.fields.get('prompt'), undefined);
    assert.equal(form.fields.get('keywords[]'), undefined);
    await h.stt.transcribe(route('gpt-4o-transcribe'), h.request(2, { context: { keyTerms: ['ATM', 'debited'] } }), never);
    ({ form } = await lastForm());
    assert.deepEqual(form.fields.get('prompt'), ['ATM, debited']);
  });

  it('refuses what a route cannot do, before any call', () => {
    const n = h.up.requests.length;
    const refuses = (model: string, more: Partial<TranscribeRequest>) => h.stt.refuses!(h.request(1, more), route(model))?.param;
    assert.equal(refuses('whisper-1', { mode: 'verbatim' }), 'mode');
    assert.equal(refuses('gpt-4o-transcribe', { mode: 'translate' }), 'mode');
    assert.equal(refuses('gpt-4o-transcribe-diarize', { context: { prompt: 'x' } }), 'prompt');
    assert.equal(refuses('whisper-1', { mode: 'translate', context: { prompt: 'x' } }), undefined);
    assert.equal(h.up.requests.length, n);
  });

  it('picks the answer format from the model name, with or without a vendor prefix', () => {
    assert.equal(audioFormatOf('whisper-1'), 'verbose_json');
    assert.equal(audioFormatOf('Systran/faster-whisper-large-v3'), 'verbose_json');
    assert.equal(audioFormatOf('openai/gpt-4o-mini-transcribe-2025-12-15'), 'json');
    assert.equal(audioFormatOf('gpt-4o-transcribe-diarize'), 'diarized_json');
    assert.equal(whisperLanguageCode('Hindi'), 'hi');
    assert.equal(whisperLanguageCode('javanese'), 'jv');
    assert.equal(whisperLanguageCode('ta'), 'ta');
    assert.equal(whisperLanguageCode('klingon'), null);
  });

  describe('failures', () => {
    it("a wrong key is a config failure, with OpenAI's message", async () => {
      const err = await upstreamFailure(h.stt.transcribe(route('whisper-1', { apiKey: 'sk-wrong-key-123456' }), h.request(1), never));
      assert.equal(err.kind, 'config');
      assert.equal(err.status, 401);
      assert.equal(err.upstreamMessage, 'Incorrect API key provided.');
    });

    it('5xx is retryable', async () => {
      h.up.next({ status: 503 });
      const busy = await upstreamFailure(h.stt.transcribe(route('whisper-1'), h.request(1), never));
      assert.deepEqual([busy.kind, busy.retryable, busy.status], ['http', true, 503]);
    });

    it("an upstream 400 comes back as a client failure carrying the upstream's reason", async () => {
      h.up.next({ status: 400, message: 'Audio file might be corrupted or unsupported' });
      const err = await upstreamFailure(h.stt.transcribe(route('whisper-1'), h.request(1), never));
      assert.deepEqual([err.kind, err.retryable, err.status, err.upstreamMessage], ['client', false, 400, 'Audio file might be corrupted or unsupported']);
    });

    it('the caller leaving aborts the upload and the wait, closing the connection', async () => {
      h.up.next({ hang: true });
      const ac = new AbortController();
      const pending = h.stt.transcribe(route('whisper-1'), h.request(2), ac.signal);
      await until(() => h.up.requests.length > 0 && h.up.active > 0);
      const rec = h.up.requests.at(-1)!;
      ac.abort();
      const err = await upstreamFailure(pending);
      assert.equal(err.kind, 'aborted');
      await rec.ended;
      assert.equal(rec.closedEarly, true);
    });

    it("a silent upstream times out within the route's timeout_ms", async () => {
      h.up.next({ hang: true });
      const started = Date.now();
      const err = await upstreamFailure(h.stt.transcribe(route('whisper-1', { timeoutMs: 300 }), h.request(1), never));
      assert.deepEqual([err.kind, err.retryable], ['timeout', true]);
      assert.ok(Date.now() - started < 2000);
    });

    it('a malformed answer is a protocol failure', async () => {
      h.up.next({ rawBody: '{"text": 42}' });
      const err = await upstreamFailure(h.stt.transcribe(route('whisper-1'), h.request(1), never));
      assert.equal(err.kind, 'protocol');
    });
  });
});
