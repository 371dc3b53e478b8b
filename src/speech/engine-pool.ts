// Warm offline engines for short utterances (a call's turns, a realtime socket's utterance mode,
// through `stt-local`): at most `size` resident pocketsphinx engines (pocketsphinx-engine.ts), each
// loading its model once and then taking utterance after utterance: the utterance's 16 kHz PCM is
// appended to the engine's audio file (padded to whole 10 ms frames) and that range decoded, one
// utterance per engine at a time; the next waits for the first engine free (in order). Before it,
// each utterance started an engine of its own (its model load 0.4–0.7 s of CPU, ~105 MB, for a
// 2–3 s utterance) after an ffmpeg decode of its WAV: five calls at once on two cores queued for
// the CPU there (bench/README.md, Voice calls). An engine whose file has grown past `maxFrames` is
// ended after its utterance and replaced when next needed; an engine idle for `idleMs` is ended
// (its memory back); one that fails is dropped. `close()` ends them all (the gateway's shutdown).
// An utterance may name the language model it is decoded with (a conversation's, language-models.ts):
// an engine started before that model was built lacks it, and is ended for one started with it.
import { FRAME_SECONDS } from './pocketsphinx-output.ts';
import { appendUtterance, type UtteranceEngine } from './pocketsphinx-engine.ts';
import type { TranscriptSegment } from './transcript.ts';
import { withSignal } from '../shared/signals.ts';

export interface EnginePoolOptions {
  /** The most engines resident at once (each ~105 MB). */
  size: number;
  start(): Promise<UtteranceEngine>;
  /** An engine idle this long is ended. Default 60 s. */
  idleMs?: number;
  /** An engine whose audio file holds more frames than this is replaced (default an hour's: 360,000, 115 MB of PCM). */
  maxFrames?: number;
}

interface Warm {
  engine: UtteranceEngine;
  idle: NodeJS.Timeout | null;
}

export class EnginePool {
  private readonly idle: Warm[] = [];
  private live = 0;
  private readonly waiting: { take: (w: Warm | null) => void; signal: AbortSignal; onAbort: () => void }[] = [];
  private closed = false;

  constructor(private readonly opts: EnginePoolOptions) {}

  /**
   * One utterance (16 kHz mono PCM) decoded on a warm engine: its segments, times from its start.
   * `signal` gives up waiting for an engine, or for the answer (the engine finishes it regardless).
   */
  async decode(pcm: Int16Array, signal: AbortSignal, model?: string): Promise<TranscriptSegment[]> {
    const { answer, start } = await this.run(pcm, signal, model, (engine, range, m) => engine.decode(range.start, range.end, m));
    const offset = start * FRAME_SECONDS;
    const r = (x: number) => Math.round((x - offset) * 1000) / 1000;
    return answer.map((s) => ({ ...s, start: r(s.start), end: r(s.end) }));
  }

  /**
   * As decode, the utterance's hypotheses instead (pocketsphinx-engine.ts's `alternatives`: spoken
   * words, distinct, the first best first), for an agent that picks the one it understands.
   */
  async alternatives(pcm: Int16Array, signal: AbortSignal, model?: string): Promise<string[][]> {
    return (await this.run(pcm, signal, model, (engine, range, m) => engine.alternatives(range.start, range.end, m))).answer;
  }

  /** `ask` on a warm engine (one with `model`, when named) about the utterance appended to it. */
  private async run<T>(
    pcm: Int16Array,
    signal: AbortSignal,
    model: string | undefined,
    ask: (engine: UtteranceEngine, range: { start: number; end: number }, model: string | undefined) => Promise<T>,
  ): Promise<{ answer: T; start: number }> {
    let warm = await this.acquire(signal);
    if (model !== undefined && !warm.engine.models.has(model)) {
      // Started before the model was built: this one ends, a new one (with every model built) starts in its place.
      this.end(warm);
      warm = await this.startOne();
    }
    const { engine } = warm;
    const start = engine.frames;
    const answer = (async () => ask(engine, await appendUtterance(engine, pcm), model !== undefined && engine.models.has(model) ? model : undefined))();
    // The engine is back once it answered, whether the caller still waits or not.
    answer.then(
      () => this.release(warm, true),
      () => this.release(warm, false),
    );
    return { answer: await withSignal(answer, signal), start };
  }

  /** Stops every engine (the gateway's shutdown: a busy one once its utterance is answered); later decodes are refused. */
  close(): void {
    this.closed = true;
    for (const w of this.waiting.splice(0)) {
      w.signal.removeEventListener('abort', w.onAbort);
      w.take(null);
    }
    for (const w of this.idle.splice(0)) this.end(w, true);
  }

  private async acquire(signal: AbortSignal): Promise<Warm> {
    signal.throwIfAborted();
    if (this.closed) throw new Error('the offline engines are closed');
    const warm = this.idle.pop();
    if (warm) {
      if (warm.idle) clearTimeout(warm.idle);
      warm.idle = null;
      return warm;
    }
    if (this.live < this.opts.size) return this.startOne();
    const taken = await new Promise<Warm | null>((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiting.findIndex((w) => w.onAbort === onAbort);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push({ take: resolve, signal, onAbort });
    });
    if (taken) return taken;
    if (this.closed) throw new Error('the offline engines are closed');
    return this.acquire(signal); // an engine was dropped: start one in its place
  }

  /** A new engine in one of the pool's places (a failed start frees the place for the next waiting utterance). */
  private async startOne(): Promise<Warm> {
    this.live += 1;
    try {
      return { engine: await this.opts.start(), idle: null };
    } catch (err) {
      this.live -= 1;
      this.wakeNext();
      throw err;
    }
  }

  /** The engine back: to the next waiting utterance, or idle; dropped when it failed, grew too long or the pool closed. */
  private release(warm: Warm, ok: boolean): void {
    if (!ok || this.closed || warm.engine.frames > (this.opts.maxFrames ?? 360_000)) {
      this.end(warm, !ok || this.closed);
      this.wakeNext();
      return;
    }
    const next = this.waiting.shift();
    if (next) {
      next.signal.removeEventListener('abort', next.onAbort);
      next.take(warm);
      return;
    }
    warm.idle = setTimeout(() => {
      const i = this.idle.indexOf(warm);
      if (i >= 0) this.idle.splice(i, 1);
      this.end(warm);
    }, this.opts.idleMs ?? 60_000);
    warm.idle.unref();
    this.idle.push(warm);
  }

  /** A waiting utterance gets to start an engine of its own (one was dropped). */
  private wakeNext(): void {
    const next = this.waiting.shift();
    if (!next) return;
    next.signal.removeEventListener('abort', next.onAbort);
    next.take(null);
  }

  private end(warm: Warm, failed = false): void {
    if (warm.idle) clearTimeout(warm.idle);
    this.live -= 1;
    if (failed) warm.engine.abort();
    else warm.engine.end().catch(() => warm.engine.abort());
  }
}
