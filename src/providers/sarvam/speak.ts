// Sarvam's text to speech (bulbul), over either of its HTTP APIs:
//   - REST, `POST {base_url}/text-to-speech`, JSON `{text, target_language_code, speaker, model,
//     pace, temperature?, speech_sample_rate, output_audio_codec}` → `{request_id, audios: [<base64>]}`:
//     the whole audio at once (the default);
//   - HTTP stream, `POST {base_url}/text-to-speech/stream`, the same body → the audio's bytes,
//     chunked as synthesized: a route with `realtime: true` uses it (first audio sooner).
// Key in `api-subscription-key`. Voices and the language sent: voice.ts. Formats: asked in the
// client's format when Sarvam writes it in a form the gateway knows (mp3, wav, flac; pcm as
// `linear16` at the asked rate when the model has it; mulaw at 8 kHz), else as 16-bit PCM, which
// the gateway converts (opus and aac: Sarvam's container for them is not documented). A WAV
// around linear16 or mulaw (REST answers are WAVs) is taken off, so raw audio streams on as such.
// `speed` is bulbul's `pace`, held to the model's range (v3: 0.5–2, v2: 0.3–3); `temperature` is
// sent to bulbul:v3 only (0.01–1); `instructions` mean nothing to bulbul.
import type { UpstreamHttp } from '../http.ts';
import { isObject, protocolError } from '../validate.ts';
import { UpstreamError, type Refusal, type ResolvedRoute, type SpeakCapability, type SpeakRequest, type SpeechAudio, type SpeechFormat } from '../types.ts';
import { readWavHeader, splitWav, WAV_MULAW, WAV_PCM, type WavHeader } from '../../speech/wav.ts';
import { sarvamJsonCall } from './call.ts';
import { languageOfScript, parseSarvamVoice, sarvamTtsLanguage } from './voice.ts';

/** Characters one request takes: REST by model (bulbul:v3 2500, v2 1500), the HTTP stream 3500. */
const MAX_CHARS = { v3: 2500, v2: 1500, stream: 3500 };
const RATES_V2 = [8000, 16000, 22050, 24000];
const RATES_V3 = [8000, 16000, 22050, 24000, 32000, 44100, 48000];
/** What opus and aac (and pcm at a rate the model lacks) are asked at. */
const FALLBACK_RATE = 24_000;
/** Sarvam's rate when none is named: containers are asked at it. */
const SARVAM_DEFAULT_RATE = 22_050;
const NATIVE: Partial<Record<SpeechFormat, string>> = { mp3: 'mp3', wav: 'wav', flac: 'flac', pcm: 'linear16', mulaw: 'mulaw' };

const isV3 = (route: ResolvedRoute): boolean => /^bulbul:v3/i.test(route.upstreamModel);
const clamp = (v: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, v));

/** The language to send: the request's, else the voice's, else the text's script; a Refusal when they clash or bulbul lacks it. */
function targetLanguage(req: SpeakRequest): string | Refusal {
  const voice = parseSarvamVoice(req.voice);
  if (voice === null) return { param: 'voice', message: `'${req.voice}' is not a Sarvam voice name (\`name\` or \`name_language_style\`).` };
  const asked = req.language ?? voice.language;
  if (asked === undefined) return languageOfScript(req.input);
  const code = sarvamTtsLanguage(asked);
  if (code === null) return { param: 'language', message: `Sarvam's voices do not speak '${asked}'.` };
  if (req.language !== undefined && voice.language !== undefined && sarvamTtsLanguage(voice.language) !== code) {
    return { param: 'language', message: `The voice '${req.voice}' speaks ${voice.language}, not ${req.language}.` };
  }
  return code;
}

/** The body both APIs take, and the codec and rate asked for. */
function sarvamBody(route: ResolvedRoute, req: SpeakRequest, language: string): { body: Record<string, unknown>; codec: string; rate: number } {
  const v3 = isV3(route);
  const codec = NATIVE[req.format] ?? 'linear16';
  let rate = FALLBACK_RATE;
  if (req.format === 'mulaw') rate = 8000;
  else if (req.format === 'pcm' && (v3 ? RATES_V3 : RATES_V2).includes(req.sampleRate)) rate = req.sampleRate;
  else if (codec !== 'linear16') rate = SARVAM_DEFAULT_RATE;
  const body: Record<string, unknown> = {
    text: req.input,
    target_language_code: language,
    speaker: parseSarvamVoice(req.voice)!.speaker,
    model: route.upstreamModel,
    speech_sample_rate: rate,
    output_audio_codec: codec,
  };
  if (req.speed !== undefined) body.pace = v3 ? clamp(req.speed, 0.5, 2) : clamp(req.speed, 0.3, 3);
  if (req.temperature !== undefined && v3) body.temperature = clamp(req.temperature, 0.01, 1);
  return { body, codec, rate };
}

const isRawCodec = (codec: string): boolean => codec === 'linear16' || codec === 'mulaw';

/** What audio in `codec` at `rate` is, given the WAV header found in front of it; null: a WAV to keep whole (ffmpeg reads it). */
function audioOf(codec: string, rate: number, header: WavHeader | null): Omit<SpeechAudio, 'chunks'> | null {
  if (header) {
    if (header.channels !== 1) return null;
    if (header.format === WAV_PCM && header.bitsPerSample === 16) return { format: 'pcm', sampleRate: header.sampleRate };
    if (header.format === WAV_MULAW && header.sampleRate === 8000) return { format: 'mulaw', sampleRate: 8000 };
    return null;
  }
  return codec === 'mulaw' ? { format: 'mulaw', sampleRate: 8000 } : { format: 'pcm', sampleRate: rate };
}

async function* concat(...parts: (Buffer | AsyncIterable<Buffer>)[]): AsyncGenerator<Buffer> {
  for (const p of parts) {
    if (Buffer.isBuffer(p)) {
      if (p.length > 0) yield p;
    } else {
      yield* p;
    }
  }
}

/** The audio of the stream API's body: raw audio without a WAV header it may carry. */
async function streamedAudio(codec: string, rate: number, chunks: AsyncIterable<Buffer>): Promise<SpeechAudio> {
  if (!isRawCodec(codec)) return { format: codec as SpeechFormat, chunks };
  const { header, headerBytes, body } = await splitWav(chunks);
  const audio = audioOf(codec, rate, header);
  return audio ? { ...audio, chunks: body } : { format: 'wav', chunks: concat(headerBytes, body) };
}

/** The audio of a REST answer: its `audios` decoded, raw ones without their WAV headers and joined; a container comes alone. */
function restAudio(routeId: string, json: unknown, codec: string, rate: number): SpeechAudio {
  if (!isObject(json) || !Array.isArray(json.audios) || json.audios.length === 0) throw protocolError(routeId, 'no audios in the answer');
  const parts = json.audios.map((a) => {
    if (typeof a !== 'string' || a.length === 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(a)) throw protocolError(routeId, 'an audio is not base64');
    return Buffer.from(a, 'base64');
  });
  if (!isRawCodec(codec)) {
    if (parts.length > 1) throw protocolError(routeId, `${parts.length} audios of a container format`);
    return { format: codec as SpeechFormat, chunks: concat(parts[0]!) };
  }
  const headers = parts.map((p) => {
    const h = readWavHeader(p);
    return h === 'more' ? null : h;
  });
  const audio = audioOf(codec, rate, headers[0]!);
  if (audio === null) {
    if (parts.length > 1) throw protocolError(routeId, `${parts.length} WAVs of an unexpected format`);
    return { format: 'wav', chunks: concat(parts[0]!) };
  }
  const raw = parts.map((p, i) => {
    const again = audioOf(codec, rate, headers[i]!);
    if (again?.format !== audio.format || again.sampleRate !== audio.sampleRate) throw protocolError(routeId, 'the audios differ in format');
    return p.subarray(headers[i]?.dataOffset ?? 0);
  });
  return { ...audio, chunks: concat(...raw) };
}

export function sarvamSpeak(http: UpstreamHttp): SpeakCapability {
  return {
    refuses(req, route) {
      const language = targetLanguage(req);
      if (typeof language !== 'string') return language;
      const max = route.realtime ? MAX_CHARS.stream : isV3(route) ? MAX_CHARS.v3 : MAX_CHARS.v2;
      const chars = [...req.input].length;
      if (chars > max) return { param: 'input', message: `Sarvam takes at most ${max} characters in one request; this input has ${chars}.` };
      return undefined;
    },
    async speak(route, req, signal) {
      const language = targetLanguage(req);
      if (typeof language !== 'string') throw new UpstreamError('client', `route ${route.id}: ${language.message}`, false, 400, language.message);
      const { body, codec, rate } = sarvamBody(route, req, language);
      if (route.realtime) {
        const { body: chunks } = await http.openBytes(sarvamJsonCall(route, '/text-to-speech/stream', body, signal), '*/*');
        return streamedAudio(codec, rate, chunks);
      }
      return restAudio(route.id, await http.postJson(sarvamJsonCall(route, '/text-to-speech', body, signal)), codec, rate);
    },
  };
}
