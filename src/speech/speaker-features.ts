// Speaker features for diarization: MFCCs per 32 ms frame (meyda), their deltas, pooled per window.
//
// meyda keeps its settings and filter-bank cache on the object `extract` is called on, and its
// module export is shared; so each extractor is a fresh object inheriting from it, with its own
// settings and cache (no shared mutable state between callers).
import { createRequire } from 'node:module';

// meyda is CommonJS (`module.exports = Meyda`), required when an extractor is made (diarization),
// not loaded with the gateway; this is the part of it used here.
interface MeydaExtractor {
  bufferSize: number;
  sampleRate: number;
  melBands: number;
  numberOfMFCCCoefficients: number;
  windowingFunction: string;
  extract(feature: 'mfcc', signal: Float32Array): number[] | null;
}
const load = createRequire(import.meta.url);

export const FRAME_SIZE = 512; // 32 ms at 16 kHz, a power of two as meyda requires
export const FRAME_HOP = 160; // 10 ms
const MEL_BANDS = 40;
const CEPSTRA = 20; // c0 (overall level) is dropped: 19 coefficients are kept
const DIMS = CEPSTRA - 1;
const PRE_EMPHASIS = 0.97;
const DELTA_SPAN = 2;
/** Frames quieter than this below the window's loudest frame are left out of the pooling. */
const POOL_FLOOR_DB = 30;

/** Per-frame features of one stretch of audio: `cepstra` and `deltas` hold DIMS values per frame. */
export interface FrameFeatures {
  frames: number;
  cepstra: Float32Array;
  deltas: Float32Array;
  /** Frame energy in dB (relative to full scale, at int16 scale). */
  energyDb: Float32Array;
}

export type FrameExtractor = (pcm: Int16Array, startSample: number, endSample: number) => FrameFeatures;

export function frameExtractor(sampleRate: number): FrameExtractor {
  const meyda: MeydaExtractor = Object.assign(Object.create(load('meyda') as MeydaExtractor) as MeydaExtractor, {
    bufferSize: FRAME_SIZE,
    sampleRate,
    melBands: MEL_BANDS,
    numberOfMFCCCoefficients: CEPSTRA,
    windowingFunction: 'hamming',
  });
  const frame = new Float32Array(FRAME_SIZE);
  return (pcm, startSample, endSample) => {
    const frames = endSample - startSample >= FRAME_SIZE ? 1 + Math.floor((endSample - startSample - FRAME_SIZE) / FRAME_HOP) : 0;
    const cepstra = new Float32Array(frames * DIMS);
    const energyDb = new Float32Array(frames);
    for (let f = 0; f < frames; f++) {
      const at = startSample + f * FRAME_HOP;
      let energy = 0;
      // Pre-emphasis; the int16 scale is kept so meyda's log(power + 1) behaves as a log.
      for (let i = 0; i < FRAME_SIZE; i++) {
        const previous = at + i > 0 ? pcm[at + i - 1]! : 0;
        const x = pcm[at + i]! - PRE_EMPHASIS * previous;
        frame[i] = x;
        energy += pcm[at + i]! * pcm[at + i]!;
      }
      energyDb[f] = 10 * Math.log10(energy / FRAME_SIZE / 32768 ** 2 + 1e-12);
      const mfcc = meyda.extract('mfcc', frame);
      for (let d = 0; d < DIMS; d++) cepstra[f * DIMS + d] = mfcc?.[d + 1] ?? 0;
    }
    return { frames, cepstra, deltas: deltas(cepstra, frames), energyDb };
  };
}

/** The usual regression deltas over ±DELTA_SPAN frames, edges repeated. */
function deltas(cepstra: Float32Array, frames: number): Float32Array {
  const out = new Float32Array(frames * DIMS);
  let norm = 0;
  for (let k = 1; k <= DELTA_SPAN; k++) norm += 2 * k * k;
  for (let f = 0; f < frames; f++) {
    for (let d = 0; d < DIMS; d++) {
      let sum = 0;
      for (let k = 1; k <= DELTA_SPAN; k++) {
        const next = Math.min(frames - 1, f + k);
        const prev = Math.max(0, f - k);
        sum += k * (cepstra[next * DIMS + d]! - cepstra[prev * DIMS + d]!);
      }
      out[f * DIMS + d] = sum / norm;
    }
  }
  return out;
}

export const EMBEDDING_DIMS = 4 * DIMS;

/**
 * One window's embedding: mean and standard deviation of the cepstra and of their deltas over the
 * window's frames [from, to), leaving out frames more than POOL_FLOOR_DB below its loudest.
 */
export function poolWindow(features: FrameFeatures, from: number, to: number): Float32Array {
  const out = new Float32Array(EMBEDDING_DIMS);
  let loudest = -Infinity;
  for (let f = from; f < to; f++) loudest = Math.max(loudest, features.energyDb[f]!);
  let n = 0;
  for (let f = from; f < to; f++) {
    if (features.energyDb[f]! < loudest - POOL_FLOOR_DB) continue;
    n++;
    for (let d = 0; d < DIMS; d++) {
      const c = features.cepstra[f * DIMS + d]!;
      const v = features.deltas[f * DIMS + d]!;
      out[d]! += c;
      out[DIMS + d]! += c * c;
      out[2 * DIMS + d]! += v;
      out[3 * DIMS + d]! += v * v;
    }
  }
  if (n === 0) return out;
  for (let d = 0; d < DIMS; d++) {
    for (const base of [0, 2 * DIMS]) {
      const mean = out[base + d]! / n;
      const variance = Math.max(0, out[base + DIMS + d]! / n - mean * mean);
      out[base + d] = mean;
      out[base + DIMS + d] = Math.sqrt(variance);
    }
  }
  return out;
}
