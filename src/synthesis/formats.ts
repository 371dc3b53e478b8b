// The speech formats as the client receives them: the spec's content types and rates, and how many
// bytes a second of a raw format (sent as produced) holds. Which formats are raw and how ffmpeg
// writes each container: src/speech/convert.ts.
import type { SpeechFormat } from '../providers/types.ts';
import { G711_SAMPLE_RATE } from '../speech/g711.ts';
import type { RawFormat } from '../speech/convert.ts';

/** The spec's table (POST /v1/audio/speech). */
export const CONTENT_TYPES: Record<SpeechFormat, string> = {
  mp3: 'audio/mpeg',
  wav: 'audio/wav',
  opus: 'audio/ogg',
  flac: 'audio/flac',
  aac: 'audio/aac',
  pcm: 'audio/L16',
  mulaw: 'audio/basic',
};

/** `pcm` without `sample_rate`: OpenAI's 24 kHz. */
export const DEFAULT_PCM_RATE = 24_000;
/** The rates `sample_rate` may name. */
export const PCM_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;

/** Bytes per second of a raw format (mono: 2 bytes a sample for pcm, 1 for μ-law at 8 kHz). */
export function rawBytesPerSecond(format: RawFormat, sampleRate: number): number {
  return format === 'pcm' ? sampleRate * 2 : G711_SAMPLE_RATE;
}
