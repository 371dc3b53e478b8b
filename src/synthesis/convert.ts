// From the audio a provider produced to the format the client asked for, as a stream:
//   - the same format (and rate, for raw audio): passed through untouched;
//   - raw PCM to raw PCM or μ-law: in the process (SpeexDSP resampler, G.711 table), no tool to start;
//   - anything else: one ffmpeg process reading and writing pipes (src/speech/ffmpeg.ts).
import type { SpeechAudio, SpeechFormat } from '../providers/types.ts';
import type { Resamplers } from '../speech/resample.ts';
import { encodeAudio } from '../speech/ffmpeg.ts';
import { g711Decode, g711Encode, G711_SAMPLE_RATE } from '../speech/g711.ts';
import { bytesOf, samplesOf } from '../speech/pcm.ts';
import { ffmpegOutput, isRaw } from './formats.ts';

export interface Target {
  format: SpeechFormat;
  /** For pcm; mulaw is always 8000. */
  sampleRate: number;
}

export interface ConvertDeps {
  resamplers(): Promise<Resamplers>;
  signal?: AbortSignal;
}

/** Whether the provider's audio is already what the client asked for. */
export function passesThrough(source: Omit<SpeechAudio, 'chunks'>, target: Target): boolean {
  if (source.format !== target.format) return false;
  if (target.format === 'pcm') return source.sampleRate === target.sampleRate;
  return true;
}

export async function* convertSpeech(source: Omit<SpeechAudio, 'chunks'>, chunks: AsyncIterable<Buffer>, target: Target, deps: ConvertDeps): AsyncGenerator<Buffer> {
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

/** PCM at `rate` to pcm at the target's rate or μ-law at 8 kHz, chunk by chunk (a chunk may end mid-sample). */
async function* rawToRaw(chunks: AsyncIterable<Buffer>, rate: number, target: Target, resamplers: Resamplers): AsyncGenerator<Buffer> {
  const to = target.format === 'mulaw' ? G711_SAMPLE_RATE : target.sampleRate;
  const resampler = rate === to ? null : resamplers.create({ from: rate, to, quality: 5 });
  const out = (samples: Int16Array): Buffer => (target.format === 'mulaw' ? Buffer.from(g711Encode('mulaw', samples)) : Buffer.from(bytesOf(samples)));
  let odd: Buffer | null = null;
  try {
    for await (const chunk of chunks) {
      let data: Buffer = odd ? Buffer.concat([odd, chunk]) : chunk;
      odd = null;
      if (data.length % 2 === 1) {
        odd = data.subarray(data.length - 1);
        data = data.subarray(0, data.length - 1);
      }
      if (data.length === 0) continue;
      const samples = samplesOf(data);
      const converted = resampler ? resampler.process(samples) : samples;
      if (converted.length > 0) yield out(converted);
    }
    if (resampler) {
      const tail = resampler.flush();
      if (tail.length > 0) yield out(tail);
    }
  } finally {
    resampler?.destroy();
  }
}
