// From the audio a provider produced to the format its listener wants, as a stream (the speech
// endpoint's client, src/synthesis/service.ts; a call's carrier, src/voice/agent.ts):
//   - the same format (and rate, for raw audio): passed through untouched;
//   - raw PCM to raw PCM or μ-law: in the process (SpeexDSP resampler, G.711 table), no tool to start;
//   - anything else: one ffmpeg process reading and writing pipes (src/speech/ffmpeg.ts).
import { setImmediate } from 'node:timers/promises';
import type { Resamplers } from './resample.ts';
import { encodeAudio } from './ffmpeg.ts';
import { g711Decode, g711Encode, G711_SAMPLE_RATE } from './g711.ts';
import { bytesOf, samplesOf } from './pcm.ts';

/**
 * The audio formats speech is produced and converted in (`pcm`: raw s16le mono; `mulaw`: G.711
 * μ-law, 8 kHz): the provider port's `SpeechFormat` (src/providers/types.ts) names the same list.
 */
export type AudioFormat = 'mp3' | 'wav' | 'opus' | 'flac' | 'aac' | 'pcm' | 'mulaw';

/** A provider's audio as it is produced (its chunks apart): `sampleRate` is set for `pcm` and `mulaw`. */
export interface AudioSource {
  format: AudioFormat;
  sampleRate?: number;
}

export type RawFormat = 'pcm' | 'mulaw';

export function isRaw(format: AudioFormat): format is RawFormat {
  return format === 'pcm' || format === 'mulaw';
}

/** ffmpeg's output arguments for each format (raw ones at `sampleRate`, mono). */
export function ffmpegOutput(format: AudioFormat, sampleRate: number): string[] {
  switch (format) {
    case 'mp3':
      return ['-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'];
    case 'wav':
      return ['-c:a', 'pcm_s16le', '-f', 'wav'];
    case 'opus':
      return ['-c:a', 'libopus', '-b:a', '32k', '-f', 'ogg'];
    case 'flac':
      return ['-c:a', 'flac', '-f', 'flac'];
    case 'aac':
      return ['-c:a', 'aac', '-b:a', '64k', '-f', 'adts'];
    case 'pcm':
      return ['-ac', '1', '-ar', String(sampleRate), '-c:a', 'pcm_s16le', '-f', 's16le'];
    case 'mulaw':
      return ['-ac', '1', '-ar', String(G711_SAMPLE_RATE), '-c:a', 'pcm_mulaw', '-f', 'mulaw'];
  }
}

export interface Target {
  format: AudioFormat;
  /** For pcm; mulaw is always 8000. */
  sampleRate: number;
}

export interface ConvertDeps {
  resamplers(): Promise<Resamplers>;
  signal?: AbortSignal;
}

/** Whether the provider's audio is already what the client asked for. */
export function passesThrough(source: AudioSource, target: Target): boolean {
  if (source.format !== target.format) return false;
  if (target.format === 'pcm') return source.sampleRate === target.sampleRate;
  return true;
}

export async function* convertSpeech(source: AudioSource, chunks: AsyncIterable<Buffer>, target: Target, deps: ConvertDeps): AsyncGenerator<Buffer> {
  if (passesThrough(source, target)) return yield* chunks;
  if (source.format === 'mulaw') {
    // μ-law to anything: decoded here first (one byte a sample, any chunking).
    const decoded = (async function* () {
      for await (const c of chunks) yield bytesOf(g711Decode('mulaw', c));
    })();
    return yield* convertSpeech({ format: 'pcm', sampleRate: G711_SAMPLE_RATE }, decoded, target, deps);
  }
  if (source.format === 'pcm' && isRaw(target.format)) {
    return yield* rawToRaw(chunks, source.sampleRate ?? target.sampleRate, target, await deps.resamplers());
  }
  const from = source.format === 'pcm' ? { pcmRate: source.sampleRate ?? target.sampleRate } : { container: true as const };
  yield* encodeAudio(chunks, from, { output: ffmpegOutput(target.format, target.sampleRate), ...(deps.signal ? { signal: deps.signal } : {}) });
}

/** The first audio of a stream sent alone (seconds). */
const FIRST_SLICE_SECONDS = 0.02;

/** PCM at `rate` to pcm at the target's rate or μ-law at 8 kHz, chunk by chunk (a chunk may end mid-sample). */
async function* rawToRaw(chunks: AsyncIterable<Buffer>, rate: number, target: Target, resamplers: Resamplers): AsyncGenerator<Buffer> {
  const to = target.format === 'mulaw' ? G711_SAMPLE_RATE : target.sampleRate;
  const resampler = rate === to ? null : resamplers.create({ from: rate, to, quality: 5 });
  const out = (samples: Int16Array): Buffer => (target.format === 'mulaw' ? Buffer.from(g711Encode('mulaw', samples)) : Buffer.from(bytesOf(samples)));
  let odd: Buffer | null = null;
  // The stream's first audio goes out converted alone: a provider's first chunk can hold seconds
  // (the router reads it whole before it accepts the route; 65 KB of 24 kHz PCM, 1.4 s, from
  // OpenAI's), and converting all of it before sending any delayed the first byte by ~5 ms. After
  // it, the conversion yields to the event loop once: the consumer's write of it is flushed on the
  // next tick, which waits while a chain of promises runs, as the rest's conversion would be.
  let head = Math.round(rate * FIRST_SLICE_SECONDS);
  try {
    for await (const chunk of chunks) {
      let data: Buffer = odd ? Buffer.concat([odd, chunk]) : chunk;
      odd = null;
      if (data.length % 2 === 1) {
        odd = data.subarray(data.length - 1);
        data = data.subarray(0, data.length - 1);
      }
      if (data.length === 0) continue;
      let samples = samplesOf(data);
      if (head > 0 && samples.length > head) {
        const first = resampler ? resampler.process(samples.subarray(0, head)) : samples.subarray(0, head);
        samples = samples.subarray(head);
        head = 0;
        if (first.length > 0) {
          yield out(first);
          await setImmediate();
        }
      }
      const converted = resampler ? resampler.process(samples) : samples;
      if (converted.length > 0) {
        head = 0;
        yield out(converted);
      }
    }
    if (resampler) {
      const tail = resampler.flush();
      if (tail.length > 0) yield out(tail);
    }
  } finally {
    resampler?.destroy();
  }
}
