// One clock for every call's playback on this instance: a single 10 ms timer steps each playing
// reply, which sends the frames now due (frame n at n × 20 ms from its start, a lead ahead so the
// carrier's buffer never runs dry). One timer for all calls instead of one per frame per call:
// at 100 calls that is 100 timer callbacks a second instead of 5,000, and a late tick sends what
// is due at once, so lateness never accumulates.
const PACER_TICK_MS = 10;

/** A playing reply: sends what is due at `now` (ms, performance.now()); false once it has nothing more to send. */
type PacedStep = (now: number) => boolean;

export class Pacer {
  private readonly steps = new Set<PacedStep>();
  private timer: NodeJS.Timeout | null = null;

  /** Steps `step` on every tick (and once now) until it answers false. */
  add(step: PacedStep): void {
    if (!step(performance.now())) return;
    this.steps.add(step);
    this.timer ??= setInterval(() => this.tick(), PACER_TICK_MS);
  }

  remove(step: PacedStep): void {
    this.steps.delete(step);
    this.idle();
  }

  private tick(): void {
    const now = performance.now();
    for (const step of this.steps) {
      let more = false;
      try {
        more = step(now);
      } finally {
        if (!more) this.steps.delete(step);
      }
    }
    this.idle();
  }

  private idle(): void {
    if (this.steps.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}
