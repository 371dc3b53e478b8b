// POST /v1/audio/translations, OpenAI's endpoint (multipart: model, file, prompt, response_format,
// temperature), and verbose_json's decoder fields through a Whisper upstream: a short clip's speech as English text, served by an stt model whose modes include
// translate, through the fake OpenAI upstream (whisper-1 translates at /v1/audio/translations), with
// the official `openai` client's `audio.translations.create`. Billed as transcription, by the
// decoded seconds; a model that cannot translate is refused before anything is held.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { multipartForm } from './form.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { wavBytes } from '../fakes/audio.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const skip = execFileSync('sh', ['-c', 'command -v ffmpeg || true']).toString().trim() ? false : 'needs ffmpeg';

describe('POST /v1/audio/translations, and verbose_json through a Whisper upstream', { skip }, () => {
  let gw: TestGateway;
  let upstream: FakeServer;
  let apiKey: string;
  let session: string;
  let client: OpenAI;
  const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: session })).body.balance_microcents as number;
  const put = async (id: string, upstreamModel: string, modes: string[]) => {
    const res = await call(gw.url, 'PUT', `/admin/models/${id}`, {
      token: ADMIN_TOKEN,
      body: {
        type: 'stt',
        owned_by: 'acme',
        languages: ['hi-IN', 'en-IN'],
        modes,
        timestamps: 'segment',
        pricing: { cents_per_minute: 0.6 },
        routes: [{ provider: 'openai', base_url: `${upstream.url}/v1`, api_key: 'sk-up', upstream_model: upstreamModel }],
      },
    });
    assert.ok(res.status < 300, res.text);
  };

  before(async () => {
    upstream = await startOpenAIUpstream({ apiKey: 'sk-up' });
    gw = await startTestGateway();
    const s = await signup(gw.url);
    session = s.token;
    apiKey = (await createKey(gw.url, s.token)).api_key;
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } })).status, 201);
    client = new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    await put('stt-whisper', 'whisper-1', ['transcribe', 'translate']);
    // Offers translate, but its only route cannot (OpenAI translates with whisper-1 alone).
    await put('stt-4o', 'gpt-4o-transcribe', ['transcribe', 'translate']);
  });
  after(async () => {
    await gw?.destroy();
    await upstream?.close();
  });

  it("the official client translates through the upstream's /audio/translations, json, verbose_json and text, billed as transcription", async () => {
    const before = await balance();
    const file = async () => toFile(wavBytes(3), 'clip.wav');
    const json = await client.audio.translations.create({ model: 'stt-whisper', file: await file(), prompt: 'a greeting', temperature: 0.2 });
    assert.match(json.text, /^translated /);
    const sent = upstream.calls('/v1/audio/translations');
    assert.equal(sent.length, 1);
    const form = sent[0]!.raw.toString('latin1');
    assert.match(form, /name="model"\r\n\r\nwhisper-1\r\n/);
    assert.match(form, /name="prompt"\r\n\r\na greeting\r\n/);
    assert.doesNotMatch(form, /name="language"/, 'a translation names no language');

    const verbose = (await client.audio.translations.create({
      model: 'stt-whisper',
      file: await file(),
      response_format: 'verbose_json',
    })) as unknown as OpenAI.Audio.TranslationVerbose;
    assert.equal(verbose.language, 'english');
    assert.ok(Math.abs(verbose.duration - 3) < 0.05, `duration ${verbose.duration}`);
    assert.match(verbose.segments![0]!.text, /translated/);
    assert.equal((verbose as unknown as { task: string }).task, 'translate');
    const text = (await client.audio.translations.create({ model: 'stt-whisper', file: await file(), response_format: 'text' })) as unknown as string;
    assert.match(text, /^translated /);
    assert.equal(upstream.calls('/v1/audio/translations').length, 3);
    assert.equal(upstream.calls('/v1/audio/transcriptions').length, 0);
    // Three calls of 3 decoded seconds at 0.6 cent a minute: 3 × 3/60 × 0.6 cent = 0.09 cent.
    assert.equal(before - (await balance()), 90_000);
  });

  it("verbose_json passes a Whisper upstream's segment decoder fields on (tokens, avg_logprob, no_speech_prob), transcribing and translating", async () => {
    const file = async () => toFile(wavBytes(3), 'clip.wav');
    const transcribed = await client.audio.transcriptions.create({
      model: 'stt-whisper',
      file: await file(),
      response_format: 'verbose_json',
      timestamp_granularities: ['segment'],
    });
    const translated = (await client.audio.translations.create({
      model: 'stt-whisper',
      file: await file(),
      response_format: 'verbose_json',
    })) as unknown as OpenAI.Audio.TranslationVerbose;
    for (const [what, segments] of [
      ['transcribed', transcribed.segments],
      ['translated', translated.segments],
    ] as const) {
      assert.ok(segments!.length > 0, what);
      // The fake's Whisper answers: tokens [50364, 440], avg_logprob -0.25, no_speech_prob 0.01 on every segment.
      for (const s of segments!) assert.deepEqual([s.tokens, s.avg_logprob, s.no_speech_prob], [[50364, 440], -0.25, 0.01], what);
    }
  });

  it('refuses a model that cannot translate (400 mode_not_supported naming model), fields OpenAI does not take, and charges nothing', async () => {
    const before = await balance();
    const sent = upstream.requests.length;
    const local = await client.audio.translations.create({ model: 'stt-local', file: await toFile(wavBytes(2), 'a.wav') }).catch((e) => e);
    assert.equal(local.status, 400);
    assert.equal(local.code, 'mode_not_supported');
    assert.equal(local.param, 'model');
    const routeCannot = await client.audio.translations.create({ model: 'stt-4o', file: await toFile(wavBytes(2), 'a.wav') }).catch((e) => e);
    assert.equal(routeCannot.status, 400);
    assert.equal(routeCannot.param, 'model');
    assert.match(routeCannot.message, /cannot translate/);
    const language = await call(gw.url, 'POST', '/v1/audio/translations', {
      token: apiKey,
      ...multipartForm({ model: 'stt-whisper', language: 'hi' }, wavBytes(2)),
    });
    assert.equal(language.status, 400, language.text);
    assert.equal(language.body.error.param, 'language');
    const mode = await call(gw.url, 'POST', '/v1/audio/translations', {
      token: apiKey,
      ...multipartForm({ model: 'stt-whisper', mode: 'translate' }, wavBytes(2)),
    });
    assert.equal(mode.body.error.param, 'mode');
    const noKey = await call(gw.url, 'POST', '/v1/audio/translations', multipartForm({ model: 'stt-whisper' }, wavBytes(2)));
    assert.equal(noKey.status, 401);
    assert.equal(upstream.requests.length, sent, 'none of these reached the upstream');
    assert.equal(await balance(), before);
  });
});
