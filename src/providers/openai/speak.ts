// OpenAI-compatible speech: POST {base_url}/audio/speech (OpenAI, and the self-hosted servers that
// speak its API). The upstream is asked for the client's format when it has it (mp3, opus, aac,
// flac, wav: passed through untouched); for `pcm` at another rate and for `mulaw` it is asked for
// its `pcm` (raw 24 kHz s16le mono), which the gateway converts. The audio streams as it arrives.
// `temperature` has no OpenAI equivalent and is not sent; `instructions` is.
import type { UpstreamHttp } from '../http.ts';
import type { SpeakCapability, SpeechFormat } from '../types.ts';
import { openaiCall } from './call.ts';

/** OpenAI's `pcm`: 24 kHz. */
export const OPENAI_PCM_RATE = 24_000;
const NATIVE: readonly SpeechFormat[] = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];

export function openaiSpeak(http: UpstreamHttp): SpeakCapability {
  return {
    async speak(route, req, signal) {
      const format = NATIVE.includes(req.format) ? req.format : 'pcm';
      const body: Record<string, unknown> = { model: route.upstreamModel, input: req.input, voice: req.voice, response_format: format };
      if (req.speed !== undefined) body.speed = req.speed;
      if (req.instructions !== undefined) body.instructions = req.instructions;
      const { body: chunks } = await http.openBytes(openaiCall(route, '/audio/speech', body, signal), '*/*');
      return format === 'pcm' ? { format, sampleRate: OPENAI_PCM_RATE, chunks } : { format, chunks };
    },
  };
}
