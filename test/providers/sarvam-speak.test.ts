// Sarvam's text to speech (bulbul) against its fake over loopback: the REST API (WAV answers in
// base64, their headers taken off raw audio) and the HTTP stream (a route with `realtime: true`);
// voices short and `<name>_<language>_<style>`; the language sent (the request's, the voice's, the
// text's script; Odia as od-IN); formats asked for natively or as PCM; pace and temperature by
// model; Sarvam's refusals and failures classified for the router.
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { UpstreamHttp } from '../../src/providers/http.ts';
import { sarvamSpeak } from '../../src/providers/sarvam/speak.ts';
import type { SpeakCapability, SpeakRequest, SpeechAudio } from '../../src/providers/types.ts';
import type { FakeServer } from '../fakes/fake-server.ts';
import { fakeSpeechAudio, fakeSpeechPcm } from '../fakes/openai-speech-upstream.ts';
import { startSarvamSpeechUpstream } from '../fakes/sarvam-speech-upstream.ts';
import { collect, never, routeTo, upstreamFailure } from './helpers.ts';

const KEY = 'sarvam-key-0123456789';
const HINDI = 'नमस्ते, आपका बैलेंस कितना है'; // 28 code points

describe('Sarvam text to speech', () => {
  let up: FakeServer;
  let http: UpstreamHttp;
  let speak: SpeakCapability;
  before(async () => {
    up = await startSarvamSpeechUpstream({ apiKey: KEY });
    http = new UpstreamHttp();
    speak = sarvamSpeak(http);
  });
  after(async () => {
    await http.close();
    await up.close();
  });
  beforeEach(() => void (up.requests.length = 0));

  const route = (overrides = {}) => routeTo(up, { provider: 'sarvam', apiKey: KEY, upstreamModel: 'bulbul:v2', ...overrides });
  const req = (more: Partial<SpeakRequest> = {}): SpeakRequest => ({ input: HINDI, voice: 'anushka', format: 'pcm', sampleRate: 16000, ...more });
  const bytes = async (audio: SpeechAudio) => Buffer.concat(await collect(audio.chunks));

  it('REST: sends the short voice as the speaker and the language of the script, and takes the WAV off the PCM', async () => {
    const audio = await speak.speak(route(), req({ speed: 1.25 }), never);
    assert.deepEqual({ format: audio.format, sampleRate: audio.sampleRate }, { format: 'pcm', sampleRate: 16000 });
    assert.ok((await bytes(audio)).equals(fakeSpeechPcm(HINDI, 16000)), 'the PCM inside the WAV, header off');
    const rec = up.requests[0]!;
    assert.equal(rec.path, '/text-to-speech');
    assert.equal(rec.headers['api-subscription-key'], KEY);
    assert.deepEqual(rec.body, {
      text: HINDI,
      target_language_code: 'hi-IN',
      speaker: 'anushka',
      model: 'bulbul:v2',
      speech_sample_rate: 16000,
      output_audio_codec: 'linear16',
      pace: 1.25,
    });
  });

  it('reads `<name>_<language>_<style>`: the name is the speaker, the language is sent (Odia as od-IN)', async () => {
    await bytes(await speak.speak(route(), req({ input: 'Hello there', voice: 'manisha_or-IN_formal' }), never));
    assert.equal(up.requests[0]!.body.speaker, 'manisha');
    assert.equal(up.requests[0]!.body.target_language_code, 'od-IN');
    // Latin script and no language anywhere: English (India).
    await bytes(await speak.speak(route(), req({ input: 'Hello there' }), never));
    assert.equal(up.requests[1]!.body.target_language_code, 'en-IN');
    // The request's language wins over the script.
    await bytes(await speak.speak(route(), req({ language: 'mr-IN' }), never));
    assert.equal(up.requests[2]!.body.target_language_code, 'mr-IN');
  });

  it('refuses what bulbul cannot say before any call: a language it lacks or that clashes with the voice, an input over its limit, a name it cannot read', () => {
    assert.equal(speak.refuses!(req({ language: 'fr-FR' }), route())?.param, 'language');
    assert.equal(speak.refuses!(req({ voice: 'anushka_hi-IN_warm', language: 'ta-IN' }), route())?.param, 'language');
    assert.equal(speak.refuses!(req({ voice: 'anushka_hi-IN_warm', language: 'hi' }), route()), undefined);
    assert.equal(speak.refuses!(req({ voice: 'anushka_xx1_warm' }), route())?.param, 'voice');
    assert.equal(speak.refuses!(req({ input: 'a'.repeat(1501) }), route())?.param, 'input');
    assert.equal(speak.refuses!(req({ input: 'a'.repeat(2500) }), route({ upstreamModel: 'bulbul:v3' })), undefined);
    assert.equal(speak.refuses!(req({ input: 'a'.repeat(3500) }), route({ realtime: true })), undefined);
    assert.equal(up.requests.length, 0);
  });

  it('asks for μ-law at 8 kHz (the WAV taken off), mp3 as itself, and PCM for what Sarvam writes in an unknown container', async () => {
    const mulaw = await speak.speak(route(), req({ format: 'mulaw', sampleRate: 8000 }), never);
    assert.deepEqual({ format: mulaw.format, sampleRate: mulaw.sampleRate }, { format: 'mulaw', sampleRate: 8000 });
    assert.ok((await bytes(mulaw)).equals(fakeSpeechAudio(HINDI, 'mulaw')));
    const mp3 = await speak.speak(route(), req({ format: 'mp3' }), never);
    assert.equal(mp3.format, 'mp3');
    assert.ok((await bytes(mp3)).equals(fakeSpeechAudio(HINDI, 'mp3', 22050)));
    const opus = await speak.speak(route(), req({ format: 'opus' }), never);
    assert.deepEqual({ format: opus.format, sampleRate: opus.sampleRate }, { format: 'pcm', sampleRate: 24000 });
    await bytes(opus);
    // pcm at a rate bulbul:v2 lacks: asked at 24 kHz (the gateway resamples); bulbul:v3 has 48 kHz.
    const pcm48 = await speak.speak(route(), req({ sampleRate: 48000 }), never);
    assert.equal(pcm48.sampleRate, 24000);
    await bytes(pcm48);
    await bytes(await speak.speak(route({ upstreamModel: 'bulbul:v3' }), req({ voice: 'shubh', sampleRate: 48000 }), never));
    assert.deepEqual(
      up.requests.map((r) => [r.body.output_audio_codec, r.body.speech_sample_rate]),
      [
        ['mulaw', 8000],
        ['mp3', 22050],
        ['linear16', 24000],
        ['linear16', 24000],
        ['linear16', 48000],
      ],
    );
  });

  it('holds pace to the model range and sends temperature to bulbul:v3 only', async () => {
    await bytes(await speak.speak(route(), req({ speed: 4, temperature: 0.5 }), never));
    await bytes(await speak.speak(route({ upstreamModel: 'bulbul:v3' }), req({ voice: 'shubh', speed: 0.25, temperature: 1.5 }), never));
    assert.deepEqual([up.requests[0]!.body.pace, up.requests[0]!.body.temperature], [3, undefined]);
    assert.deepEqual([up.requests[1]!.body.pace, up.requests[1]!.body.temperature], [0.5, 1]);
  });

  it('HTTP stream (realtime routes): the same body to /text-to-speech/stream, the audio as it arrives', async () => {
    up.next({ chunkDelayMs: 10 });
    const audio = await speak.speak(route({ realtime: true }), req(), never);
    const chunks = await collect(audio.chunks);
    assert.equal(up.requests[0]!.path, '/text-to-speech/stream');
    assert.equal(up.requests[0]!.body.output_audio_codec, 'linear16');
    assert.ok(chunks.length > 5, `${chunks.length} chunks`);
    assert.ok(Buffer.concat(chunks).equals(fakeSpeechPcm(HINDI, 16000)));
  });

  it("classifies Sarvam's failures: a wrong key is config, a refused body is the client's (with Sarvam's words), a 5xx or an answer without audio is retryable", async () => {
    const bad = await upstreamFailure(speak.speak(route({ apiKey: 'wrong-key-0123' }), req(), never));
    assert.equal(bad.kind, 'config');
    const refused = await upstreamFailure(speak.speak(route(), req({ voice: 'shubh' }), never)); // a v3 speaker on v2
    assert.equal(refused.kind, 'client');
    assert.match(refused.upstreamMessage ?? '', /not compatible with model bulbul:v2/);
    up.next({ status: 503 });
    const down = await upstreamFailure(speak.speak(route({ realtime: true }), req(), never));
    assert.deepEqual([down.kind, down.retryable], ['http', true]);
    for (const rawBody of ['{"request_id":"r1"}', '{"audios":["not base64!"]}', '{"audios":[]}']) {
      up.next({ rawBody });
      const malformed = await upstreamFailure(speak.speak(route(), req(), never));
      assert.deepEqual([malformed.kind, malformed.retryable], ['protocol', true], rawBody);
    }
    const none = await upstreamFailure(speak.speak(route({ apiKey: '' }), req(), never));
    assert.equal(none.kind, 'config');
  });
});
