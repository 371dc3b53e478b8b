// A fake Sarvam text-to-speech upstream (bulbul) on loopback, speaking its wire format
// (docs.sarvam.ai text-to-speech/convert and convert-stream; sarvamai SDK):
//   POST /text-to-speech        {text, target_language_code, speaker, model, pace, temperature,
//                                speech_sample_rate, output_audio_codec} → {request_id, audios: [<base64>]}:
//                                a WAV for wav, linear16 (PCM) and mulaw (format 7), else the codec's bytes
//   POST /text-to-speech/stream  the same body → the audio's bytes, chunked (100 ms a chunk): raw for
//                                linear16 and mulaw, else the codec's bytes
// The audio is the shared fake tone (60 ms a character) at `speech_sample_rate` (default 22050).
// Sarvam's checks: the key in `api-subscription-key` (403), the text's length (REST: bulbul:v3 2500,
// v2 1500; stream 3500), `target_language_code` among bulbul's 11 (`od-IN`, never `or-IN`), a
// lowercase speaker of the model, pace in the model's range, `temperature` on v3 only, the model's
// sample rates, a known codec (400 with `{error: {message, code, request_id}}`). FakeBehaviour
// faults as in the OpenAI speech fake (`status`, `closeAfterChunks`, `chunkDelayMs`), and `rawBody`
// for a REST answer that is not Sarvam's.
import { wavOf } from '../../src/speech/wav.ts';
import { samplesOf } from '../../src/speech/pcm.ts';
import { FakeServer, sendAnswer, sendJson, type Exchange } from './fake-server.ts';
import { fakeSpeechAudio, fakeSpeechPcm, streamAudio } from './openai-speech-upstream.ts';

export const BULBUL_LANGUAGES = ['bn-IN', 'en-IN', 'gu-IN', 'hi-IN', 'kn-IN', 'ml-IN', 'mr-IN', 'od-IN', 'pa-IN', 'ta-IN', 'te-IN'];
const SPEAKERS: Record<string, string[]> = {
  'bulbul:v2': ['anushka', 'manisha', 'vidya', 'arya', 'abhilash', 'karun', 'hitesh'],
  'bulbul:v3': ['shubh', 'aditya', 'ritu', 'priya', 'neha', 'rahul', 'pooja', 'rohan', 'simran', 'kavya'],
};
const RATES: Record<string, number[]> = { 'bulbul:v2': [8000, 16000, 22050, 24000], 'bulbul:v3': [8000, 16000, 22050, 24000, 32000, 44100, 48000] };
const PACE: Record<string, [number, number]> = { 'bulbul:v2': [0.3, 3], 'bulbul:v3': [0.5, 2] };
const CODECS: Record<string, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  flac: 'audio/flac',
  linear16: 'audio/pcm',
  mulaw: 'audio/basic',
  aac: 'audio/aac',
  opus: 'audio/ogg',
};

/** A μ-law WAV (format 7, 8 kHz mono) around G.711 bytes. */
function mulawWav(bytes: Buffer): Buffer {
  const pcmWav = wavOf(new Int16Array(0), 8000);
  const header = Buffer.from(pcmWav.subarray(0, 44));
  header.writeUInt32LE(36 + bytes.length, 4);
  header.writeUInt16LE(7, 20);
  header.writeUInt32LE(8000, 28);
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.writeUInt32LE(bytes.length, 40);
  return Buffer.concat([header, bytes]);
}

/** The audio the fake answers for a body, as the REST API encodes it (WAVs) or the stream sends it (raw). */
export function sarvamAudio(text: string, codec: string, rate: number, rest: boolean): Buffer {
  if (codec === 'linear16') return rest ? wavOf(samplesOf(fakeSpeechPcm(text, rate)), rate) : fakeSpeechPcm(text, rate);
  if (codec === 'mulaw') return rest ? mulawWav(fakeSpeechAudio(text, 'mulaw')) : fakeSpeechAudio(text, 'mulaw');
  return fakeSpeechAudio(text, codec, rate);
}

export function startSarvamSpeechUpstream(opts: { apiKey: string }): Promise<FakeServer> {
  return FakeServer.start(async (x: Exchange) => {
    const { rec, behaviour: b } = x;
    const fail = (status: number, message: string) =>
      sendJson(x.res, status, {
        error: {
          message,
          code: status === 403 ? 'invalid_api_key_error' : status === 400 ? 'invalid_request_error' : 'internal_server_error',
          request_id: `req_${rec.at}`,
        },
      });
    const stream = rec.path === '/text-to-speech/stream';
    if (rec.path !== '/text-to-speech' && !stream) return fail(404, 'Not Found');
    if (rec.headers['api-subscription-key'] !== opts.apiKey) return fail(403, 'Invalid API key');
    if (b.status) return fail(b.status, b.message ?? 'upstream failure');
    const body = rec.body as Record<string, any>;
    const model = body.model ?? 'bulbul:v2';
    if (!SPEAKERS[model]) return fail(400, `Invalid model: ${model}`);
    const max = stream ? 3500 : model === 'bulbul:v3' ? 2500 : 1500;
    if (typeof body.text !== 'string' || body.text.length === 0 || [...body.text].length > max) return fail(400, `text must be 1 to ${max} characters`);
    if (!BULBUL_LANGUAGES.includes(body.target_language_code)) return fail(400, `Invalid target_language_code: ${body.target_language_code}`);
    if (body.speaker !== undefined && !SPEAKERS[model]!.includes(body.speaker))
      return fail(400, `Speaker '${body.speaker}' is not compatible with model ${model}`);
    const [lo, hi] = PACE[model]!;
    if (body.pace !== undefined && (typeof body.pace !== 'number' || body.pace < lo || body.pace > hi))
      return fail(400, `pace must be between ${lo} and ${hi} for ${model}`);
    if (body.temperature !== undefined && model !== 'bulbul:v3') return fail(400, 'temperature is only supported for bulbul:v3');
    const rate = body.speech_sample_rate ?? 22050;
    if (!RATES[model]!.includes(rate)) return fail(400, `Invalid speech_sample_rate ${rate} for ${model}`);
    const codec = body.output_audio_codec ?? 'wav';
    if (!CODECS[codec]) return fail(400, `Invalid output_audio_codec: ${codec}`);
    const audio = sarvamAudio(body.text, codec, rate, !stream);
    if (!stream) return sendAnswer(x, { request_id: `req_${rec.at}`, audios: [audio.toString('base64')] });
    await streamAudio(x, audio, CODECS[codec]!, codec === 'linear16' ? rate / 5 : codec === 'mulaw' ? 800 : 4096);
  });
}
