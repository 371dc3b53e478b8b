// The recent audio of a realtime socket or a call (16-bit PCM at its rate), kept only as far back as
// an utterance may still need it: the current speech plus its prefix padding, or what a client has
// appended since its last commit; never more than `maxSamples` (an utterance's longest, plus the padding).
export class AudioBuffer {
  private chunks: { start: number; samples: Int16Array }[] = [];
  /** Samples appended since the session began (the session's audio clock, in samples). */
  total = 0;

  constructor(private readonly maxSamples: number) {}

  append(samples: Int16Array): void {
    if (samples.length === 0) return;
    this.chunks.push({ start: this.total, samples });
    this.total += samples.length;
    this.trim(this.total - this.maxSamples);
  }

  /** The first sample still kept. */
  get first(): number {
    return this.chunks[0]?.start ?? this.total;
  }

  /** Forgets the samples before `from`. */
  trim(from: number): void {
    while (this.chunks.length > 0) {
      const c = this.chunks[0]!;
      const end = c.start + c.samples.length;
      if (end <= from) this.chunks.shift();
      else {
        if (c.start < from) this.chunks[0] = { start: from, samples: c.samples.subarray(from - c.start) };
        break;
      }
    }
  }

  /** A copy of samples [from, to) (clipped to what is kept). */
  slice(from: number, to: number): Int16Array {
    const start = Math.max(from, this.first);
    const end = Math.min(to, this.total);
    const out = new Int16Array(Math.max(0, end - start));
    for (const c of this.chunks) {
      const cEnd = c.start + c.samples.length;
      if (cEnd <= start || c.start >= end) continue;
      if (c.start >= start && cEnd <= end)
        out.set(c.samples, c.start - start); // whole: no view made
      else {
        const a = Math.max(start, c.start);
        const b = Math.min(end, cEnd);
        out.set(c.samples.subarray(a - c.start, b - c.start), a - start);
      }
    }
    return out;
  }
}
