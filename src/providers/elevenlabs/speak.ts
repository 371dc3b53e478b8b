// ElevenLabs text to speech: `POST {base_url}/v1/text-to-speech/{voice_id}/stream?output_format=…`
// (base_url without a version, as in ElevenLabs' SDK: https://api.elevenlabs.io), key in
// `xi-api-key`, JSON `{text, model_id, voice_settings?: {speed}, language_code?}`; the answer is the
// audio's bytes, chunked as synthesized. A model's voice is an ElevenLabs voice id. The client's
// format is asked for when ElevenLabs writes it: `mulaw` as `ulaw_8000`, `pcm` as `pcm_<rate>` at
// 8, 16, 22.05 and 24 kHz (44.1 and 48 kHz need a Pro plan: asked at 24 kHz and resampled here),
// `mp3` as `mp3_44100_128`; all passed through untouched. wav, opus, flac and aac are asked as
// `pcm_24000` and transcoded (ffmpeg). `speed` is voice_settings.speed, held to its 0.7–1.2;
// `language` goes as ISO-639-1 `language_code`; `temperature` and `instructions` are not sent.
import { routeUrl, type UpstreamCall, type UpstreamHttp } from '../http.ts';
import type { CancelSignal } from '../cancel.ts';
import { primaryLanguage } from '../../speech/languages.ts';
import { UpstreamError, type ResolvedRoute, type SpeakCapability, type SpeakRequest, type SpeechAudio } from '../types.ts';

const PCM_RATES = [8000, 16000, 22050, 24000];
const FALLBACK_RATE = 24_000;

/** ElevenLabs' `output_format` for a request, and the audio it names. */
export function elevenLabsFormat(req: SpeakRequest): { outputFormat: string; audio: Omit<SpeechAudio, 'chunks'> } {
  if (req.format === 'mulaw') return { outputFormat: 'ulaw_8000', audio: { format: 'mulaw', sampleRate: 8000 } };
  if (req.format === 'mp3') return { outputFormat: 'mp3_44100_128', audio: { format: 'mp3' } };
  const rate = req.format === 'pcm' && PCM_RATES.includes(req.sampleRate) ? req.sampleRate : FALLBACK_RATE;
  return { outputFormat: `pcm_${rate}`, audio: { format: 'pcm', sampleRate: rate } };
}

function elevenLabsCall(route: ResolvedRoute, voice: string, outputFormat: string, body: unknown, signal: CancelSignal): UpstreamCall {
  if (!route.apiKey) throw new UpstreamError('config', `route ${route.id} has no API key`, false);
  // routeUrl's URL is shared between calls: the query goes on a copy.
  const url = new URL(routeUrl(route, `/v1/text-to-speech/${encodeURIComponent(voice)}/stream`));
  url.searchParams.set('output_format', outputFormat);
  return { routeId: route.id, url, headers: { 'xi-api-key': route.apiKey }, body, timeoutMs: route.timeoutMs, signal, secrets: [route.apiKey] };
}

export function elevenLabsSpeak(http: UpstreamHttp): SpeakCapability {
  return {
    async speak(route, req, signal) {
      const { outputFormat, audio } = elevenLabsFormat(req);
      const body: Record<string, unknown> = { text: req.input, model_id: route.upstreamModel };
      if (req.speed !== undefined) body.voice_settings = { speed: Math.min(1.2, Math.max(0.7, req.speed)) };
      const language = req.language === undefined ? null : primaryLanguage(req.language);
      if (language) body.language_code = language;
      const { body: chunks } = await http.openBytes(elevenLabsCall(route, req.voice, outputFormat, body, signal), '*/*');
      return { ...audio, chunks };
    },
  };
}
