// Offline speaker diarization for stt-local: a classical pipeline over 16 kHz mono PCM.
//   speech segments (given) → 1.5 s windows, 0.75 s hop, inside each segment
//   → per window: mean and std of 19 MFCCs and their deltas (speaker-features.ts)
//   → z-scored over the recording → agglomerative clustering, cosine distance, average linkage,
//     clusters under 3 windows folded into the nearest one as outliers
//   → each segment takes its windows' majority cluster → speakers numbered by first appearance.
// Memory: the PCM is read a segment at a time from a PcmSource (an array, or the recogniser's file
// on disk for a job: an hour of PCM is 115 MB), and at most MAX_WINDOWS embeddings are kept, so a
// recording of any length is diarized in the same few MB. `diarizeSource` yields to the event loop
// between segments, so hours of speech do not stall the process.
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { averageLinkage, cutWithoutOutliers, type Cut } from './cluster.ts';
import { EMBEDDING_DIMS, FRAME_HOP, FRAME_SIZE, frameExtractor, poolWindow } from './speaker-features.ts';

export interface SpeechSegment {
  start: number;
  end: number;
}

export interface SpeakerSegment extends SpeechSegment {
  speaker: number;
}

export interface DiarizeOptions {
  /** The number of speakers when the caller knows it (a hint: fewer if there are fewer windows). */
  numSpeakers?: number;
  /** Upper bound when the number is found from the distance threshold. Default 8. */
  maxSpeakers?: number;
  /** Linkage distance at which clusters stop merging (without numSpeakers). Default DEFAULT_THRESHOLD. */
  threshold?: number;
}

export interface Diarization {
  segments: SpeakerSegment[];
  speakers: number;
}

/** Tuned with `npm run eval:diarization -- --tune` on the development conversations (README). */
export const DEFAULT_THRESHOLD = 1.1;
export const DEFAULT_MAX_SPEAKERS = 8;
const WINDOW_FRAMES = 150; // 1.5 s of 10 ms frames
const WINDOW_HOP_FRAMES = 75;
/** Longer recordings widen the hop so the n×n distance matrix stays small (2000² floats = 16 MB). */
const MAX_WINDOWS = 2000;
/** Smaller clusters are outliers (a cough, a laugh, a noisy window), folded into the nearest speaker. */
const MIN_CLUSTER_WINDOWS = 3;

/** 16 kHz mono PCM the diarizer reads one span at a time. */
export interface PcmSource {
  /** Samples in all. */
  readonly samples: number;
  /** Samples [from, to) (the caller keeps within `samples`). */
  read(from: number, to: number): Int16Array;
}

export const pcmInMemory = (pcm: Int16Array): PcmSource => ({ samples: pcm.length, read: (from, to) => pcm.subarray(from, to) });

interface Window {
  segment: number;
  frames: number;
  embedding: Float32Array;
}

export function diarize(pcm: Int16Array, sampleRate: 16000, segments: readonly SpeechSegment[], opts: DiarizeOptions = {}): Diarization {
  return prepareDiarization(pcm, sampleRate, segments).cut(opts);
}

/** `diarize` over PCM read a segment at a time, yielding to the event loop every ~20 ms of work. */
export async function diarizeSource(source: PcmSource, sampleRate: 16000, segments: readonly SpeechSegment[], opts: DiarizeOptions = {}): Promise<Diarization> {
  const steps = diarizationSteps(source, sampleRate, segments);
  let slice = performance.now();
  for (let step = steps.next(); ; step = steps.next()) {
    if (step.done) return step.value.cut(opts);
    if (performance.now() - slice > 20) {
      await yieldToLoop();
      slice = performance.now();
    }
  }
}

/**
 * The expensive part (features, dendrogram) once; `cut` then labels the segments for given
 * options in milliseconds (the evaluation sweeps thresholds with it).
 */
export function prepareDiarization(pcm: Int16Array, sampleRate: 16000, segments: readonly SpeechSegment[]): { cut(opts?: DiarizeOptions): Diarization } {
  const steps = diarizationSteps(pcmInMemory(pcm), sampleRate, segments);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

type Prepared = { cut(opts?: DiarizeOptions): Diarization };

/** The preparation, one step (a yield) per segment embedded. */
function* diarizationSteps(pcm: PcmSource, sampleRate: 16000, segments: readonly SpeechSegment[]): Generator<void, Prepared> {
  if (sampleRate !== 16000) throw new RangeError(`diarize: 16000 Hz PCM expected, got ${sampleRate}`);
  const duration = pcm.samples / sampleRate;
  const speech = segments
    .map((s) => ({ start: Math.max(0, s.start), end: Math.min(duration, s.end) }))
    .filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end) && s.end > s.start)
    .sort((x, y) => x.start - y.start);
  const windows = speech.length > 0 ? yield* embedWindows(pcm, sampleRate, speech) : [];
  const vectors = windows.map((w) => w.embedding);
  const merges = averageLinkage(vectors);
  return {
    cut(opts = {}) {
      checkCount('numSpeakers', opts.numSpeakers);
      checkCount('maxSpeakers', opts.maxSpeakers);
      if (speech.length === 0) return { segments: [], speakers: 0 };
      const labels = cutWithoutOutliers(vectors, merges, cutFor(opts), MIN_CLUSTER_WINDOWS);
      return numberByFirstAppearance(speech, majorityPerSegment(speech.length, windows, labels));
    },
  };
}

function checkCount(name: string, value: number | undefined): void {
  if (value !== undefined && !(Number.isInteger(value) && value >= 1)) {
    throw new RangeError(`diarize: ${name} must be a positive integer, got ${value}`);
  }
}

function* embedWindows(pcm: PcmSource, sampleRate: number, speech: readonly SpeechSegment[]): Generator<void, Window[]> {
  const extract = frameExtractor(sampleRate);
  const spans = speech.map((s) => {
    const from = Math.round(s.start * sampleRate);
    const to = Math.round(s.end * sampleRate);
    const frames = to - from >= FRAME_SIZE ? 1 + Math.floor((to - from - FRAME_SIZE) / FRAME_HOP) : 0;
    return { from, to, frames };
  });
  let hop = WINDOW_HOP_FRAMES;
  const count = (h: number) => spans.reduce((n, s) => n + windowStarts(s.frames, h).length, 0);
  while (count(hop) > MAX_WINDOWS) hop = Math.ceil((hop * count(hop)) / MAX_WINDOWS);

  const windows: Window[] = [];
  for (const [segment, span] of spans.entries()) {
    if (span.frames === 0) continue;
    // One sample before the span too: the pre-emphasis of its first sample reads it.
    const lead = span.from > 0 ? 1 : 0;
    const features = extract(pcm.read(span.from - lead, span.to), lead, lead + span.to - span.from);
    for (const start of windowStarts(features.frames, hop)) {
      const end = Math.min(features.frames, start + WINDOW_FRAMES);
      windows.push({ segment, frames: end - start, embedding: poolWindow(features, start, end) });
    }
    yield;
  }
  standardize(windows);
  return windows;
}

/** Window starts covering `frames`: hop apart, the last one flush with the end. */
function windowStarts(frames: number, hop: number): number[] {
  if (frames === 0) return [];
  if (frames <= WINDOW_FRAMES) return [0];
  const last = frames - WINDOW_FRAMES;
  const starts: number[] = [];
  for (let s = 0; s < last; s += hop) starts.push(s);
  starts.push(last);
  return starts;
}

/** z-scores each dimension over the recording, so cosine distance sees speaker differences, not the shared mean. */
function standardize(windows: readonly Window[]): void {
  if (windows.length < 2) return;
  for (let d = 0; d < EMBEDDING_DIMS; d++) {
    let sum = 0;
    let squares = 0;
    for (const w of windows) {
      sum += w.embedding[d]!;
      squares += w.embedding[d]! ** 2;
    }
    const mean = sum / windows.length;
    const std = Math.sqrt(Math.max(0, squares / windows.length - mean * mean)) || 1;
    for (const w of windows) w.embedding[d] = (w.embedding[d]! - mean) / std;
  }
}

function cutFor(opts: DiarizeOptions): Cut {
  if (opts.numSpeakers !== undefined) return { clusters: opts.numSpeakers };
  return { threshold: opts.threshold ?? DEFAULT_THRESHOLD, maxClusters: opts.maxSpeakers ?? DEFAULT_MAX_SPEAKERS };
}

/**
 * The cluster of each segment: the one holding most of its windows' frames. A segment too short
 * for a single frame (< 32 ms) takes the cluster of the segment before it (or after, at the start).
 */
function majorityPerSegment(segments: number, windows: readonly Window[], labels: Int32Array): number[] {
  const votes: Map<number, number>[] = Array.from({ length: segments }, () => new Map());
  windows.forEach((w, i) => {
    const vote = votes[w.segment]!;
    vote.set(labels[i]!, (vote.get(labels[i]!) ?? 0) + w.frames);
  });
  const chosen = votes.map((vote) => {
    let best = -1;
    let weight = 0;
    for (const [label, frames] of vote) {
      if (frames > weight || (frames === weight && label < best)) {
        best = label;
        weight = frames;
      }
    }
    return best;
  });
  const firstKnown = chosen.find((c) => c >= 0) ?? 0;
  let previous = firstKnown;
  return chosen.map((c) => (c >= 0 ? (previous = c) : previous));
}

function numberByFirstAppearance(speech: readonly SpeechSegment[], clusters: readonly number[]): Diarization {
  const numbers = new Map<number, number>();
  const segments = speech.map((s, i) => {
    const cluster = clusters[i]!;
    if (!numbers.has(cluster)) numbers.set(cluster, numbers.size);
    return { start: s.start, end: s.end, speaker: numbers.get(cluster)! };
  });
  return { segments, speakers: numbers.size };
}
