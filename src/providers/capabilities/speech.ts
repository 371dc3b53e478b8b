// The speak capability's port: text to speech (`POST /v1/audio/speech`), the formats it answers in
// and the audio a provider streams back.
import type { CancelSignal } from '../cancel.ts';
import type { Refusal, ResolvedRoute } from '../upstream.ts';

/** The audio formats of POST /v1/audio/speech (`pcm`: raw s16le mono; `mulaw`: G.711 μ-law, 8 kHz). */
export const SPEECH_FORMATS = ['mp3', 'wav', 'opus', 'flac', 'aac', 'pcm', 'mulaw'] as const;
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

export interface SpeakRequest {
  /** The text as the client sent it (the provider may transliterate it for its engine). */
  input: string;
  voice: string;
  /** BCP-47, when the client named one (a voice that speaks several languages). */
  language?: string;
  /** What the client wants; a provider produces it when it can, else what it can (see SpeechAudio). */
  format: SpeechFormat;
  /** For `pcm`: the sample rate asked for (mulaw is always 8000). */
  sampleRate: number;
  speed?: number;
  temperature?: number;
  /** OpenAI's `instructions` (tone, accent): passed to providers that take them. */
  instructions?: string;
}

/**
 * Audio as a provider produces it: the requested format when it can (the gateway passes it through
 * untouched), else raw PCM (`pcm` with its rate) or any container ffmpeg reads, which the gateway
 * converts. `sampleRate` is set for `pcm` and `mulaw`.
 */
export interface SpeechAudio {
  format: SpeechFormat;
  sampleRate?: number;
  /** The audio's bytes as they arrive; throws UpstreamError on a failure. Leaving the loop stops the upstream. */
  chunks: AsyncIterable<Buffer>;
}

/** Text to speech (`POST /v1/audio/speech`). */
export interface SpeakCapability {
  /** As TranscribeCapability's: a voice or language this route's upstream cannot speak. */
  refuses?(req: SpeakRequest, route: ResolvedRoute): Refusal | undefined;
  /** Resolves once the upstream accepted the request; the audio then streams from `chunks`. */
  speak(route: ResolvedRoute, req: SpeakRequest, signal: CancelSignal): Promise<SpeechAudio>;
}
