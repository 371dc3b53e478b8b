// The speech formats as the client receives them: the spec's content types, which formats are raw
// (sent as produced, countable in seconds), and how ffmpeg writes each container.
import type { SpeechFormat } from '../providers/types.ts';
import { G711_SAMPLE_RATE } from '../speech/g711.ts';

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

export type RawFormat = 'pcm' | 'mulaw';

export function isRaw(format: SpeechFormat): format is RawFormat {
  return format === 'pcm' || format === 'mulaw';
}

/** Bytes per second of a raw format (mono: 2 bytes a sample for pcm, 1 for μ-law at 8 kHz). */
export function rawBytesPerSecond(format: RawFormat, sampleRate: number): number {
  return format === 'pcm' ? sampleRate * 2 : G711_SAMPLE_RATE;
}

/** ffmpeg's output arguments for each format (raw ones at `sampleRate`, mono). */
export function ffmpegOutput(format: SpeechFormat, sampleRate: number): string[] {
  switch (format) {
    case 'mp3': return ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'];
    case 'wav': return ['-c:a', 'pcm_s16le', '-f', 'wav'];
    case 'opus': return ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'];
    case 'flac': return ['-c:a', 'flac', '-f', 'flac'];
    case 'aac': return ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'];
    case 'pcm': return ['-ac', '1', '-ar', String(sampleRate), '-c:a', 'pcm_s16le', '-f', 's16le'];
    case 'mulaw': return ['-ac', '1', '-ar', String(G711_SAMPLE_RATE), '-c:a', 'pcm_mulaw', '-f', 'mulaw'];
  }
}
