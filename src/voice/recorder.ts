// One call's recording while it goes on: both sides of the line as two channels of 8 kHz PCM16
// (channel 0 the callee as the carrier's frames brought them, channel 1 the agent as its chunks
// were sent to the carrier), laid on one timeline: the media loop's clock, from the call's answer
// (time 0 is the transcript's), so a side that is quiet is silence there.
//
// The 20 ms loop only copies samples into memory (`heard`, `sent`, `cleared`); every second a
// timer (never the loop) interleaves what is settled and appends it to a file (the writer, a
// partial file under DATA_DIR: src/voice/recordings.ts). Settled: up to half a second before now,
// since a callee frame may come late (jitter) and the agent's chunks go out 300 ms ahead of when
// the carrier plays them (src/voice/playback.ts). A barge-in's `clear` drops the agent's audio the
// carrier had queued and not played yet, as the carrier does. At the end, what is left is written.
//
// The agent's chunks come in the stream's encoding and rate: a 16 or 24 kHz stream's (an Exotel
// `?sample-rate=`) is brought to 8 kHz by the SpeexDSP resampler (src/speech/resample.ts: its
// anti-aliasing filter), one a call, streaming across the chunks, never by keeping every 2nd or
// 3rd sample, which folds whatever is above 4 kHz into the band (5 kHz heard as 3 kHz).
import { endianness } from 'node:os';
import type { Logger } from 'pino';
import { g711Decode } from '../speech/g711.ts';
import { samplesOf } from '../speech/pcm.ts';
import type { Resampler, Resamplers } from '../speech/resample.ts';
import type { WireAudio } from '../providers/carrier-wire/types.ts';

const RATE = 8000;
/** Samples per ms. */
const PER_MS = RATE / 1000;
/** Audio younger than this is not written yet: a late callee frame, or agent audio a `clear` may still drop. */
const SETTLE_MS = 500;
/** A callee frame this much later than the clock says (a gap in the carrier's frames) is placed at its time, the gap silence. */
const CALLEE_GAP_MS = 100;
/** The recording starts at most this long before its stream (an answer the carrier backdated). */
const MAX_LEAD_IN_MS = 10_000;
const FLUSH_EVERY_MS = 1000;
const BIG_ENDIAN = endianness() === 'BE';
/**
 * SpeexDSP's quality for the agent's channel at 16 or 24 kHz: the telephone band (to 3.4 kHz) kept
 * within 1 dB and what is above 4 kHz rejected (a 5 kHz tone's alias under -80 dB), at about half
 * quality 5's cost, which the media loop pays on every chunk (measured: docs/api/voice.md, Recordings).
 */
const AGENT_QUALITY = 3;

/** What the media loop tells a recording (src/voice/media.ts, src/voice/playback.ts). */
export interface MediaTap {
  /** The callee's audio, decoded to 8 kHz PCM16, as a frame came. */
  heard(samples: Int16Array): void;
  /** A chunk of the agent's audio sent to the carrier, in the stream's encoding and rate. */
  sent(chunk: Buffer, audio: WireAudio, rate: number): void;
  /** The carrier was told to drop what it had queued (a barge-in). */
  cleared(): void;
}

/** One channel's samples not written yet, from the recording's `flushed` sample on. */
class Channel {
  data = new Int16Array(RATE * 4);
  /** The absolute sample after the last one placed. */
  cursor = 0;

  place(at: number, base: number, samples: Int16Array): void {
    const need = at - base + samples.length;
    if (need > this.data.length) {
      const grown = new Int16Array(Math.max(need, this.data.length * 2));
      grown.set(this.data);
      this.data = grown;
    }
    this.data.set(samples, at - base);
    this.cursor = at + samples.length;
  }

  /** Drops the samples from `at` on (zeroes them); the next are placed from there. */
  truncate(at: number, base: number): void {
    if (this.cursor <= at) return;
    const from = Math.max(0, at - base);
    this.data.fill(0, from, Math.max(from, this.cursor - base));
    this.cursor = Math.max(at, base);
  }

  /** Forgets the first `n` samples (written). */
  shift(n: number, upTo: number): void {
    this.data.copyWithin(0, n);
    this.data.fill(0, Math.max(0, this.data.length - n));
    this.cursor = Math.max(this.cursor, upTo);
  }
}

export interface RecorderDeps {
  /** Appends interleaved stereo PCM16 (little-endian) to the partial file; resolves once written. */
  append(bytes: Buffer): Promise<void>;
  /** Everything is appended: the file is closed. */
  done(): Promise<void>;
  now(): number;
  log: Logger;
  /** The instance's resamplers: a stream at 16 or 24 kHz gets one for the agent's channel. */
  resamplers: Resamplers;
}

export class CallRecorder implements MediaTap {
  private readonly callee = new Channel();
  private readonly agent = new Channel();
  /** The absolute sample up to which both channels are written. */
  private flushed = 0;
  private origin: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;
  /** The agent's chunks down to 8 kHz (a stream at another rate); its filter runs across them. */
  private down: Resampler | null = null;
  /** Bytes handed to the writer. */
  bytes = 0;

  constructor(private readonly deps: RecorderDeps) {}

  /** The stream started: the timeline's 0 is the call's answer (`answeredAt`), at most MAX_LEAD_IN_MS back. */
  begin(answeredAt: number): void {
    if (this.origin !== null || this.closed) return;
    this.origin = Math.max(answeredAt, this.deps.now() - MAX_LEAD_IN_MS);
    this.timer = setInterval(() => this.flush(false), FLUSH_EVERY_MS);
    this.timer.unref();
  }

  private position(at = this.deps.now()): number {
    return Math.max(0, Math.round((at - (this.origin ?? at)) * PER_MS));
  }

  heard(samples: Int16Array): void {
    if (this.origin === null || this.closed) return;
    const c = this.callee;
    const due = this.position() - samples.length;
    const at = c.cursor < due - CALLEE_GAP_MS * PER_MS ? due : c.cursor;
    c.place(Math.max(at, this.flushed), this.flushed, samples);
  }

  sent(chunk: Buffer, audio: WireAudio, rate: number): void {
    if (this.origin === null || this.closed) return;
    const a = this.agent;
    // Queued behind what the carrier still plays, or now when it plays nothing.
    a.place(Math.max(a.cursor, this.position(), this.flushed), this.flushed, this.agentPcm8k(chunk, audio, rate));
  }

  cleared(): void {
    if (this.origin === null || this.closed) return;
    this.agent.truncate(this.position(), this.flushed);
    this.dropResampler(); // what its filter held back belongs to the audio dropped
  }

  /** A chunk sent to the carrier as 8 kHz PCM16: μ-law decoded; PCM16 at 16 or 24 kHz resampled (the call's resampler). */
  private agentPcm8k(chunk: Buffer, audio: WireAudio, rate: number): Int16Array {
    if (audio === 'mulaw') return g711Decode('mulaw', chunk);
    const samples = samplesOf(chunk.length % 2 === 0 ? chunk : chunk.subarray(0, chunk.length - 1));
    if (rate === RATE) return samples;
    if (this.down?.from !== rate) {
      this.dropResampler();
      this.down = this.deps.resamplers.create({ from: rate, to: RATE, quality: AGENT_QUALITY });
    }
    return this.down.process(samples);
  }

  private dropResampler(): void {
    this.down?.destroy();
    this.down = null;
  }

  /** Writes what is settled (everything, `final`: then the agent's audio the carrier never played is dropped). */
  private flush(final: boolean): Promise<void> {
    if (this.origin === null) return this.writing;
    const now = this.position();
    if (final) this.agent.truncate(now, this.flushed);
    const upTo = final ? Math.max(this.callee.cursor, this.agent.cursor) : now - SETTLE_MS * PER_MS;
    const n = upTo - this.flushed;
    if (n <= 0) return this.writing;
    const frames = new Int16Array(n * 2);
    const left = this.callee.data;
    const right = this.agent.data;
    for (let i = 0, l = Math.min(n, left.length); i < l; i++) frames[i * 2] = left[i]!;
    for (let i = 0, r = Math.min(n, right.length); i < r; i++) frames[i * 2 + 1] = right[i]!;
    const out = Buffer.from(frames.buffer);
    if (BIG_ENDIAN) out.swap16(); // WAV is little-endian
    this.callee.shift(n, upTo);
    this.agent.shift(n, upTo);
    this.flushed = upTo;
    this.bytes += out.length;
    this.writing = this.writing.then(() =>
      this.deps.append(out).catch((err: unknown) => this.deps.log.error({ err }, 'a piece of the call recording was not written')),
    );
    return this.writing;
  }

  /** The call is over: the rest is written; resolves once the writer has it all. Idempotent. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (!this.closed) {
      this.closed = true;
      this.dropResampler();
      void this.flush(true);
      this.writing = this.writing.then(() => this.deps.done().catch((err: unknown) => this.deps.log.warn({ err }, 'the recording file did not close')));
    }
    await this.writing;
  }
}
