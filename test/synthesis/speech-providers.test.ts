// POST /v1/audio/speech through Sarvam (bulbul) and ElevenLabs fakes speaking their wire formats:
// voices as the catalog names them, the upstream's own format passed through byte for byte, the
// rest transcoded; failover before the first audio byte (an error status, a REST answer that is
// not audio, a stream that dies after its headers) and never after (the body cut short, the
// audio sent charged).
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, beforeEach, describe, it } from 'node:test';
import { ADMIN_TOKEN, call, startTestGateway, type TestGateway } from '../helper.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { fakeSpeechPcm } from '../fakes/openai-speech-upstream.ts';
import { sarvamAudio, startSarvamSpeechUpstream } from '../fakes/sarvam-speech-upstream.ts';
import { ELEVENLABS_VOICES, elevenLabsAudio, startElevenLabsUpstream } from '../fakes/elevenlabs-upstream.ts';
import { balance, fundedKey, has, probe, speak, sseEvents } from './helpers.ts';

const skip = has('ffmpeg') ? false : 'needs ffmpeg (scripts/install-debian-packages.sh)';
const SARVAM_KEY = 'sarvam-key-0123456789';
const XI_KEY = 'xi-key-0123456789';
const HINDI = 'नमस्ते, आपका बैलेंस कितना है'; // 28 characters: 1.68 s of the fakes' tone
const PRICE = 1; // cent per 1000 characters: 1000 µ¢ a character

/** The body and the error that ended it, if any. */
async function readAll(res: Response): Promise<{ bytes: Buffer; error: unknown }> {
  const got: Buffer[] = [];
  try {
    for await (const c of res.body as unknown as AsyncIterable<Uint8Array>) got.push(Buffer.from(c));
    return { bytes: Buffer.concat(got), error: null };
  } catch (error) {
    return { bytes: Buffer.concat(got), error };
  }
}

describe('POST /v1/audio/speech through Sarvam and ElevenLabs', { skip }, () => {
  let gw: TestGateway;
  let sarvamA: FakeServer;
  let sarvamB: FakeServer;
  let xiA: FakeServer;
  let xiB: FakeServer;
  let apiKey: string;
  let session: string;

  const putModel = async (id: string, body: Record<string, unknown>) => {
    const put = await call(gw.url, 'PUT', `/admin/models/${id}`, {
      token: ADMIN_TOKEN,
      body: { type: 'tts', max_input_chars: 1500, pricing: { cents_per_1k_chars: PRICE }, ...body },
    });
    assert.ok(put.status < 300, put.text);
  };

  before(async () => {
    [sarvamA, sarvamB, xiA, xiB] = await Promise.all([
      startSarvamSpeechUpstream({ apiKey: SARVAM_KEY }),
      startSarvamSpeechUpstream({ apiKey: SARVAM_KEY }),
      startElevenLabsUpstream({ apiKey: XI_KEY }),
      startElevenLabsUpstream({ apiKey: XI_KEY }),
    ]);
    gw = await startTestGateway();
    ({ apiKey, session } = await fundedKey(gw));
    // Sarvam: the HTTP stream first, REST second.
    const sarvam = (fake: FakeServer, realtime: boolean) => ({
      provider: 'sarvam',
      base_url: fake.url,
      api_key: SARVAM_KEY,
      upstream_model: 'bulbul:v2',
      timeout_ms: 2000,
      realtime,
    });
    await putModel('tts-bulbul', {
      owned_by: 'sarvam',
      voices: ['anushka', 'manisha_ta-IN_calm'],
      languages: ['hi-IN', 'ta-IN', 'en-IN'],
      routes: [sarvam(sarvamA, true), sarvam(sarvamB, false)],
    });
    const xi = (fake: FakeServer) => ({ provider: 'elevenlabs', base_url: fake.url, api_key: XI_KEY, upstream_model: 'eleven_flash_v2_5', timeout_ms: 2000 });
    await putModel('tts-eleven', { owned_by: 'elevenlabs', voices: ELEVENLABS_VOICES, routes: [xi(xiA), xi(xiB)] });
  });
  after(async () => {
    await gw?.destroy();
    await Promise.all([sarvamA, sarvamB, xiA, xiB].map((f) => f?.close()));
  });
  beforeEach(() => {
    for (const f of [sarvamA, sarvamB, xiA, xiB]) f.requests.length = 0;
  });

  it('Sarvam: pcm and mulaw as bulbul writes them, byte for byte; a voice in the long form speaks its language', async () => {
    const pcm = await speak(gw, apiKey, { model: 'tts-bulbul', input: HINDI, voice: 'anushka', response_format: 'pcm', sample_rate: 16000 });
    assert.equal(pcm.headers.get('content-type'), 'audio/L16');
    assert.ok(Buffer.from(await pcm.arrayBuffer()).equals(sarvamAudio(HINDI, 'linear16', 16000, false)));
    const mulaw = await speak(gw, apiKey, { model: 'tts-bulbul', input: 'Vanakkam', voice: 'manisha_ta-IN_calm', response_format: 'mulaw' });
    assert.ok(Buffer.from(await mulaw.arrayBuffer()).equals(sarvamAudio('Vanakkam', 'mulaw', 8000, false)));
    assert.deepEqual(
      sarvamA.requests.map((r) => [r.path, r.body.speaker, r.body.target_language_code, r.body.output_audio_codec]),
      [
        ['/text-to-speech/stream', 'anushka', 'hi-IN', 'linear16'],
        ['/text-to-speech/stream', 'manisha', 'ta-IN', 'mulaw'],
      ],
    );
    const clash = await speak(gw, apiKey, { model: 'tts-bulbul', input: 'Vanakkam', voice: 'manisha_ta-IN_calm', language: 'hi-IN' });
    assert.equal(clash.status, 400);
    assert.equal(((await clash.json()) as any).error.param, 'language');
  });

  it('Sarvam: fails over before the first audio byte (a 5xx, a stream dead after its headers) to the REST route', async () => {
    const before = await balance(gw, session);
    sarvamA.next({ status: 503 }, { closeAfterChunks: 0 });
    for (let i = 0; i < 2; i++) {
      const res = await speak(gw, apiKey, { model: 'tts-bulbul', input: HINDI, voice: 'anushka', response_format: 'pcm', sample_rate: 24000 });
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(fakeSpeechPcm(HINDI, 24000)));
    }
    assert.deepEqual(
      sarvamB.requests.map((r) => r.path),
      ['/text-to-speech', '/text-to-speech'],
    );
    assert.equal(before - (await balance(gw, session)), 2 * 28 * 1000);
  });

  it('Sarvam: never fails over after the first audio byte: the body is cut short, the audio sent is charged', async () => {
    const before = await balance(gw, session);
    sarvamA.next({ closeAfterChunks: 2, chunkDelayMs: 20 });
    const res = await speak(gw, apiKey, { model: 'tts-bulbul', input: HINDI, voice: 'anushka', response_format: 'pcm', sample_rate: 16000 });
    assert.equal(res.status, 200);
    const { bytes, error } = await readAll(res);
    assert.ok(error, 'an incomplete body, not a complete-looking one');
    assert.equal(bytes.length, 2 * 3200);
    assert.equal(sarvamB.requests.length, 0);
    await sleep(50);
    // 0.2 s of audio at 15 characters a second: 3 characters.
    assert.equal(before - (await balance(gw, session)), 3 * 1000);
  });

  it('ElevenLabs: ulaw_8000 and pcm_16000 passed through byte for byte; wav transcoded from its 24 kHz PCM', async () => {
    const voice = ELEVENLABS_VOICES[1]!;
    const mulaw = await speak(gw, apiKey, { model: 'tts-eleven', input: HINDI, voice, response_format: 'mulaw' });
    assert.equal(mulaw.headers.get('content-type'), 'audio/basic');
    assert.ok(Buffer.from(await mulaw.arrayBuffer()).equals(elevenLabsAudio(HINDI, 'ulaw_8000')));
    const pcm = await speak(gw, apiKey, { model: 'tts-eleven', input: HINDI, voice, response_format: 'pcm', sample_rate: 16000 });
    assert.ok(Buffer.from(await pcm.arrayBuffer()).equals(elevenLabsAudio(HINDI, 'pcm_16000')));
    const sse = sseEvents(await (await speak(gw, apiKey, { model: 'tts-eleven', input: HINDI, voice, response_format: 'mulaw', stream_format: 'sse' })).text());
    assert.ok(Buffer.concat(sse.slice(0, -1).map((e) => Buffer.from(e.audio, 'base64'))).equals(elevenLabsAudio(HINDI, 'ulaw_8000')));
    assert.deepEqual(sse.at(-1), { type: 'speech.audio.done', format: 'mulaw', sample_rate: 8000, usage: { type: 'characters', characters: 28 } });
    const wav = Buffer.from(await (await speak(gw, apiKey, { model: 'tts-eleven', input: HINDI, voice, response_format: 'wav' })).arrayBuffer());
    const p = probe(wav);
    assert.deepEqual([p.codec, p.container, p.sampleRate], ['pcm_s16le', 'wav', 24000]);
    assert.ok(Math.abs(p.duration - 1.68) < 0.01);
    assert.deepEqual(
      xiA.requests.map((r) => r.query),
      ['output_format=ulaw_8000', 'output_format=pcm_16000', 'output_format=ulaw_8000', 'output_format=pcm_24000'],
    );
  });

  it('ElevenLabs: a refused key fails over to the next route; a stream cut after its first bytes is not retried', async () => {
    xiA.next({ status: 401 });
    const ok = await speak(gw, apiKey, { model: 'tts-eleven', input: HINDI, voice: ELEVENLABS_VOICES[0], response_format: 'pcm', sample_rate: 16000 });
    assert.ok(Buffer.from(await ok.arrayBuffer()).equals(elevenLabsAudio(HINDI, 'pcm_16000')));
    assert.equal(xiB.requests.length, 1);
    xiB.next({ closeAfterChunks: 1 });
    xiA.next({ closeAfterChunks: 1 });
    const cut = await readAll(
      await speak(gw, apiKey, { model: 'tts-eleven', input: HINDI, voice: ELEVENLABS_VOICES[0], response_format: 'pcm', sample_rate: 16000 }),
    );
    assert.ok(cut.error);
    assert.equal(xiA.requests.length + xiB.requests.length, 3, 'one call for the cut stream');
  });
});
