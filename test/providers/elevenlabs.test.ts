// ElevenLabs text to speech against its fake over loopback: the stream endpoint per voice, the
// output_format asked for each client format (passed through when ElevenLabs writes it: ulaw_8000,
// pcm_<rate>, mp3), speed and language, and its failures classified for the router.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamHttp } from '../../src/providers/http.ts';
import { elevenLabsSpeak } from '../../src/providers/elevenlabs/speak.ts';
import type { SpeakCapability, SpeakRequest } from '../../src/providers/types.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { ELEVENLABS_VOICES, elevenLabsAudio, startElevenLabsUpstream } from '../fakes/elevenlabs-upstream.ts';
import { collect, never, routeTo, upstreamFailure } from './helpers.ts';

const KEY = 'xi-key-0123456789';
const VOICE = ELEVENLABS_VOICES[0]!;
const TEXT = 'Your call is important to us.';

describe('ElevenLabs text to speech', () => {
  let up: FakeServer;
  let http: UpstreamHttp;
  let speak: SpeakCapability;
  before(async () => {
    up = await startElevenLabsUpstream({ apiKey: KEY });
    http = new UpstreamHttp();
    speak = elevenLabsSpeak(http);
  });
  after(async () => {
    await http.close();
    await up.close();
  });
  beforeEach(() => void (up.requests.length = 0));

  const route = (overrides = {}) => routeTo(up, { provider: 'elevenlabs', apiKey: KEY, upstreamModel: 'eleven_flash_v2_5', ...overrides });
  const req = (more: Partial<SpeakRequest> = {}): SpeakRequest => ({ input: TEXT, voice: VOICE, format: 'pcm', sampleRate: 24000, ...more });

  it('asks each format ElevenLabs writes as itself and streams it untouched', async () => {
    const cases: [Partial<SpeakRequest>, string, string, number | undefined][] = [
      [{ format: 'mulaw', sampleRate: 8000 }, 'ulaw_8000', 'mulaw', 8000],
      [{ format: 'pcm', sampleRate: 16000 }, 'pcm_16000', 'pcm', 16000],
      [{ format: 'pcm', sampleRate: 8000 }, 'pcm_8000', 'pcm', 8000],
      [{ format: 'mp3' }, 'mp3_44100_128', 'mp3', undefined],
    ];
    for (const [more, outputFormat, format, sampleRate] of cases) {
      const audio = await speak.speak(route(), req(more), never);
      assert.deepEqual({ format: audio.format, sampleRate: audio.sampleRate }, { format, sampleRate }, outputFormat);
      assert.ok(Buffer.concat(await collect(audio.chunks)).equals(elevenLabsAudio(TEXT, outputFormat)), outputFormat);
    }
    assert.deepEqual(
      up.requests.map((r) => r.query),
      cases.map(([, f]) => `output_format=${f}`),
    );
    const rec = up.requests[0]!;
    assert.equal(rec.path, `/v1/text-to-speech/${VOICE}/stream`);
    assert.equal(rec.headers['xi-api-key'], KEY);
    assert.deepEqual(rec.body, { text: TEXT, model_id: 'eleven_flash_v2_5' });
  });

  it('asks PCM at 24 kHz for what it would not pass through (wav, opus, flac, aac; pcm at 44.1 and 48 kHz)', async () => {
    for (const more of [{ format: 'wav' }, { format: 'opus' }, { format: 'pcm', sampleRate: 48000 }] as Partial<SpeakRequest>[]) {
      const audio = await speak.speak(route(), req(more), never);
      assert.deepEqual({ format: audio.format, sampleRate: audio.sampleRate }, { format: 'pcm', sampleRate: 24000 });
      await collect(audio.chunks);
    }
    assert.deepEqual(
      up.requests.map((r) => r.query),
      ['output_format=pcm_24000', 'output_format=pcm_24000', 'output_format=pcm_24000'],
    );
  });

  it('sends speed as voice_settings.speed (held to 0.7–1.2) and the language as ISO-639-1', async () => {
    await collect((await speak.speak(route(), req({ speed: 2, language: 'hi-IN', temperature: 1, instructions: 'calm' }), never)).chunks);
    assert.deepEqual(up.requests[0]!.body, { text: TEXT, model_id: 'eleven_flash_v2_5', voice_settings: { speed: 1.2 }, language_code: 'hi' });
  });

  it('classifies its failures: a wrong key or unknown voice is config, 5xx retryable; its `detail.message` kept', async () => {
    const bad = await upstreamFailure(speak.speak(route({ apiKey: 'wrong-key-0123' }), req(), never));
    assert.equal(bad.kind, 'config');
    assert.equal(bad.upstreamMessage, 'Invalid API key');
    const voice = await upstreamFailure(speak.speak(route(), req({ voice: 'nobody' }), never));
    assert.equal(voice.kind, 'config');
    up.next({ status: 500 });
    const down = await upstreamFailure(speak.speak(route(), req(), never));
    assert.deepEqual([down.kind, down.retryable], ['http', true]);
  });
});
