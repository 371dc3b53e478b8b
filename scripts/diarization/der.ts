// Diarization error rate, as NIST's md-eval scores it for one speaker at a time:
//   DER = (missed speech + false alarm + speaker confusion) / scored reference speech,
// with the one-to-one speaker mapping that maximises the matched time, and a collar (no-score
// zone) of ± `collar` seconds around every reference segment boundary. Scored on 10 ms frames.

export interface Labelled {
  start: number;
  end: number;
  speaker: string | number;
}

export interface DerScore {
  /** Scored reference speech, seconds. */
  speech: number;
  missed: number;
  falseAlarm: number;
  confusion: number;
  der: number;
}

const STEP = 0.01;

export function diarizationError(reference: readonly Labelled[], hypothesis: readonly Labelled[], collar: number): DerScore {
  const duration = Math.max(0, ...reference.map((s) => s.end), ...hypothesis.map((s) => s.end));
  const frames = Math.ceil(duration / STEP);
  const ref = labelFrames(reference, frames);
  const hyp = labelFrames(hypothesis, frames);
  const scored = new Uint8Array(frames).fill(1);
  for (const s of reference) {
    for (const edge of [s.start, s.end]) {
      for (let f = Math.max(0, Math.floor((edge - collar) / STEP)); f < Math.min(frames, Math.ceil((edge + collar) / STEP)); f++) {
        const centre = (f + 0.5) * STEP;
        if (Math.abs(centre - edge) < collar) scored[f] = 0;
      }
    }
  }
  const overlap = Array.from({ length: ref.count }, () => new Float64Array(hyp.count));
  for (let f = 0; f < frames; f++) {
    if (scored[f] && ref.labels[f]! >= 0 && hyp.labels[f]! >= 0) overlap[ref.labels[f]!]![hyp.labels[f]!]! += 1;
  }
  const mapping = bestMapping(overlap, hyp.count);
  let speech = 0;
  let missed = 0;
  let falseAlarm = 0;
  let confusion = 0;
  for (let f = 0; f < frames; f++) {
    if (!scored[f]) continue;
    const r = ref.labels[f]!;
    const h = hyp.labels[f]!;
    if (r >= 0) speech++;
    if (r >= 0 && h < 0) missed++;
    else if (r < 0 && h >= 0) falseAlarm++;
    else if (r >= 0 && h >= 0 && mapping[r] !== h) confusion++;
  }
  const seconds = (n: number) => n * STEP;
  return {
    speech: seconds(speech),
    missed: seconds(missed),
    falseAlarm: seconds(falseAlarm),
    confusion: seconds(confusion),
    der: speech > 0 ? (missed + falseAlarm + confusion) / speech : 0,
  };
}

/** Speaker index per frame (-1: nobody); a frame belongs to a segment holding its centre. */
function labelFrames(segments: readonly Labelled[], frames: number): { labels: Int32Array; count: number } {
  const ids = new Map<string | number, number>();
  const labels = new Int32Array(frames).fill(-1);
  for (const s of segments) {
    if (!ids.has(s.speaker)) ids.set(s.speaker, ids.size);
    for (let f = Math.max(0, Math.floor(s.start / STEP)); f < Math.min(frames, Math.ceil(s.end / STEP)); f++) {
      const centre = (f + 0.5) * STEP;
      if (centre >= s.start && centre < s.end) labels[f] = ids.get(s.speaker)!;
    }
  }
  return { labels, count: ids.size };
}

/** The one-to-one map reference → hypothesis speaker (or -1) maximising matched frames (exhaustive: few speakers). */
function bestMapping(overlap: readonly Float64Array[], hypCount: number): Int32Array {
  const best = { total: -1, mapping: new Int32Array(overlap.length).fill(-1) };
  const current = new Int32Array(overlap.length).fill(-1);
  const used = new Uint8Array(hypCount);
  const search = (r: number, total: number) => {
    if (r === overlap.length) {
      if (total > best.total) {
        best.total = total;
        best.mapping = current.slice();
      }
      return;
    }
    for (let h = 0; h < hypCount; h++) {
      if (used[h]) continue;
      used[h] = 1;
      current[r] = h;
      search(r + 1, total + overlap[r]![h]!);
      used[h] = 0;
    }
    current[r] = -1;
    search(r + 1, total);
  };
  search(0, 0);
  return best.mapping;
}
