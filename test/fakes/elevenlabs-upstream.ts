// A fake ElevenLabs text-to-speech upstream on loopback, speaking its wire format (ElevenLabs API
// reference, text-to-speech/stream): POST /v1/text-to-speech/{voice_id}/stream?output_format=…
// with `xi-api-key` and JSON {text, model_id, voice_settings?, language_code?} → the audio's bytes,
// chunked: `pcm_<rate>` raw s16le, `ulaw_8000` raw G.711, `mp3_44100_128` MP3 (the shared fake
// tone, 60 ms a character). Its errors: 401 `{detail: {status: "invalid_api_key", message}}`, 404
// for an unknown voice, 422 (a missing text), 400 for an output format it does not know.
// FakeBehaviour faults as in the OpenAI speech fake.
import { FakeServer, sendJson, type Exchange } from './fake-server.ts';
import { fakeSpeechAudio, streamAudio } from './openai-speech-upstream.ts';

export const ELEVENLABS_VOICES = ['21m00Tcm4TlvDq8ikWAM', 'JBFqnCBsd6RMkjVDRZzb'];
const PATH = /^\/v1\/text-to-speech\/([^/]+)\/stream$/;

/** What an output_format names: the fake tone's format and rate, and its content type. */
function outputOf(name: string): { format: string; rate: number; type: string } | null {
  const pcm = /^pcm_(8000|16000|22050|24000|44100|48000)$/.exec(name);
  if (pcm) return { format: 'pcm', rate: Number(pcm[1]), type: 'audio/pcm' };
  if (name === 'ulaw_8000') return { format: 'mulaw', rate: 8000, type: 'audio/basic' };
  if (name === 'mp3_44100_128') return { format: 'mp3', rate: 44100, type: 'audio/mpeg' };
  return null;
}

export function elevenLabsAudio(text: string, outputFormat: string): Buffer {
  const out = outputOf(outputFormat)!;
  return fakeSpeechAudio(text, out.format, out.rate);
}

export function startElevenLabsUpstream(opts: { apiKey: string }): Promise<FakeServer> {
  return FakeServer.start(async (x: Exchange) => {
    const { rec, behaviour: b } = x;
    const fail = (status: number, detail: unknown) => sendJson(x.res, status, { detail });
    const m = PATH.exec(rec.path);
    if (rec.method !== 'POST' || !m) return fail(404, 'Not Found');
    if (rec.headers['xi-api-key'] !== opts.apiKey) return fail(401, { status: 'invalid_api_key', message: 'Invalid API key' });
    if (b.status) return fail(b.status, { status: 'upstream_failure', message: b.message ?? 'upstream failure' });
    const voice = decodeURIComponent(m[1]!);
    if (!ELEVENLABS_VOICES.includes(voice)) return fail(404, { status: 'voice_not_found', message: `A voice with the voice_id ${voice} was not found.` });
    const body = rec.body as Record<string, any>;
    if (typeof body?.text !== 'string' || body.text.length === 0)
      return fail(422, [{ loc: ['body', 'text'], msg: 'field required', type: 'value_error.missing' }]);
    const outputFormat = new URLSearchParams(rec.query).get('output_format') ?? 'mp3_44100_128';
    const out = outputOf(outputFormat);
    if (!out) return fail(400, { status: 'invalid_output_format', message: `Unsupported output format ${outputFormat}` });
    await streamAudio(x, elevenLabsAudio(body.text, outputFormat), out.type, out.format === 'mp3' ? 4096 : out.rate / 5);
  });
}
