// A plain energy detector, for callers that have no speech segments of their own (no recogniser
// output, no VAD): 20 ms frames, a threshold between the noise floor and the loud end of the
// recording, short gaps bridged and blips dropped.
import type { SpeechSegment } from './diarize.ts';

const FRAME_SECONDS = 0.02;
/** Speech is at least this far above the noise floor (10th percentile of frame energies)... */
const ABOVE_FLOOR_DB = 12;
/** ...and no more than this far below the loud end (99th percentile)... */
const BELOW_PEAK_DB = 35;
/** ...but always this far below it, for recordings with hardly a pause (floor close to peak). */
const MIN_BELOW_PEAK_DB = 15;
const MIN_GAP_SECONDS = 0.2;
const MIN_SPEECH_SECONDS = 0.15;
const PAD_SECONDS = 0.05;

export function energySegments(pcm: Int16Array, sampleRate: number): SpeechSegment[] {
  const frameSamples = Math.round(FRAME_SECONDS * sampleRate);
  const frames = Math.floor(pcm.length / frameSamples);
  if (frames === 0) return [];
  const db = new Float64Array(frames);
  for (let f = 0; f < frames; f++) {
    let energy = 0;
    for (let i = f * frameSamples; i < (f + 1) * frameSamples; i++) energy += pcm[i]! * pcm[i]!;
    db[f] = 10 * Math.log10(energy / frameSamples + 1);
  }
  const sorted = Float64Array.from(db).sort();
  const floor = sorted[Math.floor(0.1 * (frames - 1))]!;
  const peak = sorted[Math.floor(0.99 * (frames - 1))]!;
  const threshold = Math.min(Math.max(floor + ABOVE_FLOOR_DB, peak - BELOW_PEAK_DB), peak - MIN_BELOW_PEAK_DB);

  const runs: SpeechSegment[] = [];
  for (let f = 0; f < frames; f++) {
    if (db[f]! < threshold) continue;
    const start = f * FRAME_SECONDS;
    const end = (f + 1) * FRAME_SECONDS;
    const last = runs[runs.length - 1];
    if (last && start - last.end < MIN_GAP_SECONDS) last.end = end;
    else runs.push({ start, end });
  }
  const duration = pcm.length / sampleRate;
  return runs
    .filter((r) => r.end - r.start >= MIN_SPEECH_SECONDS)
    .map((r) => ({ start: Math.max(0, r.start - PAD_SECONDS), end: Math.min(duration, r.end + PAD_SECONDS) }));
}
