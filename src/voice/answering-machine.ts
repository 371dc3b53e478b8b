// The gateway's own answering-machine detector (issue 41 §1), for the carriers that have none we use
// (the simulator, Exotel): it hears the callee's side of a just-answered call, 8 kHz PCM as the
// media loop decodes it, and decides `human`, `machine` (a voicemail greeting, a call-screening
// prompt) or `unknown` within `budgetMs` of the stream's start, while the agent's greeting plays
// (it never holds the greeting back). Then, for a machine, it tells when the greeting is over: its
// beep ended, or its silence. Pure: the voice detector (src/speech/vad.ts: WebRTC VAD with the
// energy gate) is injected, time is the audio's own (samples heard).
//
// How it tells them apart (Asterisk's AMD() rules, on the speech's cadence, plus the beep):
// - a person answers with a short "hello?" / "yes, speaking" / "hi, who is this?" (under LONG_MS of
//   speech, pauses shorter than JOIN_MS inside it) and then waits: HUMAN_SILENCE_MS of silence after
//   a short run of speech is `human`;
// - a greeting or a screening prompt talks on: a run of speech reaching LONG_MS is `machine`;
// - a beep is `machine` whenever it comes: a steady tone of 800–2000 Hz for at least TONE_MS, found
//   by Goertzel filters every 25 Hz on each 20 ms frame (a frame is tonal when one filter holds
//   TONE_SHARE of its energy; a zero-crossing gate spares the filters on most frames);
// - at the budget's end: a run of speech of BUDGET_LONG_MS so far is `machine`; a shorter one is
//   `human` when it has ended, `unknown` while it goes on; none heard is `unknown`. (The call's
//   side, src/voice/voicemail.ts, counts the budget from the stream's first frame, late or not.)
// The greeting's end (`ended`): the beep's last tonal frame, or END_SILENCE_MS of silence after its
// last speech (a greeting without a beep), or at the latest MAX_GREETING_MS after the answer.
import type { VoiceDetector } from '../speech/vad.ts';
import { goertzelCoeff, goertzelPower } from '../speech/tone.ts';

export type AnsweredBy = 'human' | 'machine' | 'unknown';

export interface Detection {
  answeredBy: AnsweredBy;
  /** What decided it: `short_greeting` (a short answer, then silence), `long_greeting`, `beep`, `no_speech`, `timeout`. */
  detail: 'short_greeting' | 'long_greeting' | 'beep' | 'no_speech' | 'timeout';
  /** When, in ms of audio from the start. */
  atMs: number;
}

export interface GreetingEnd {
  /** `beep`: its tone ended; `silence`: the greeting stopped without one; `timeout`: it never stopped. */
  by: 'beep' | 'silence' | 'timeout';
  atMs: number;
}

const RATE = 8000;
const FRAME = 160; // 20 ms
const FRAME_MS = 20;
/** A run of speech this long (its pauses under JOIN_MS included) is a greeting, not a person's "hello?". */
export const LONG_MS = 2000;
/** Pauses shorter than this join speech into one run (between the words and sentences of a greeting). */
const JOIN_MS = 700;
/** Silence after a short run of speech: the person is waiting for us. */
const HUMAN_SILENCE_MS = 800;
/** At the budget's end, a run of speech this long so far is a greeting. */
const BUDGET_LONG_MS = 1400;
/** The decision comes within this much audio from the stream's first frame (the 4 s from the answer, when the stream starts with it). */
export const DEFAULT_BUDGET_MS = 3800;
/** A greeting has ended when this much silence follows its last speech (and no beep came). */
const END_SILENCE_MS = 1800;
/** The longest a greeting is waited for (then the message plays anyway). */
const MAX_GREETING_MS = 30_000;
/** A beep: 800–2000 Hz, steady, for at least this long (whole 20 ms frames of it). */
const TONE_MS = 120;
const TONE_LOW_HZ = 800;
const TONE_HIGH_HZ = 2000;
const TONE_STEP_HZ = 25;
const TONE_SHARE = 0.6;
/** A tone quieter than this (dBFS) is line noise, not a beep. */
const TONE_MIN_DB = -40;

const TONE_FREQS = Array.from({ length: (TONE_HIGH_HZ - TONE_LOW_HZ) / TONE_STEP_HZ + 1 }, (_, i) => TONE_LOW_HZ + i * TONE_STEP_HZ);
const TONE_COEFFS = TONE_FREQS.map((f) => goertzelCoeff(f, RATE));
// Zero crossings a frame of a pure tone of 800 Hz (2000 Hz) has, with some slack for noise.
const MIN_CROSSINGS = Math.floor(((2 * TONE_LOW_HZ) / RATE) * FRAME * 0.8);
const MAX_CROSSINGS = Math.ceil(((2 * TONE_HIGH_HZ) / RATE) * FRAME * 1.2);

/** The frequency of the tone that holds at least TONE_SHARE of the frame's energy, or null (speech, noise, silence). */
export function toneOf(frame: Int16Array): number | null {
  let energy = 0;
  let crossings = 0;
  for (let i = 0; i < frame.length; i++) {
    energy += frame[i]! * frame[i]!;
    if (i > 0 && frame[i - 1]! < 0 !== frame[i]! < 0) crossings += 1;
  }
  if (energy === 0 || 10 * Math.log10(energy / frame.length / (32768 * 32768)) < TONE_MIN_DB) return null;
  if (crossings < MIN_CROSSINGS || crossings > MAX_CROSSINGS) return null;
  let best = 0;
  let bestAt = -1;
  for (let k = 0; k < TONE_COEFFS.length; k++) {
    const power = goertzelPower(frame, TONE_COEFFS[k]!);
    if (power > best) [best, bestAt] = [power, k];
  }
  // A sinusoid of amplitude A: power ≈ (A·N/2)², energy ≈ A²·N/2, so the share is power·2/(N·energy).
  return bestAt >= 0 && (2 * best) / (frame.length * energy) >= TONE_SHARE ? TONE_FREQS[bestAt]! : null;
}

export interface DetectorOptions {
  /** The decision comes within this much audio (default DEFAULT_BUDGET_MS). */
  budgetMs?: number;
}

export class AnsweringMachineDetector {
  private readonly pending = new Int16Array(FRAME);
  private pendingLength = 0;
  private frames = 0;
  /** The run of speech in progress or last heard: its first onset and its last voiced end (ms); null before any. */
  private runStart: number | null = null;
  private runEnd: number | null = null;
  private inSpeech = false;
  /** The tone being heard: its frequency and its frames so far; when the last beep ended. */
  private toneHz = 0;
  private toneFrames = 0;
  private beepEndedAt: number | null = null;
  private beepHeard = false;
  private decision: Detection | null = null;
  private end: GreetingEnd | null = null;
  private readonly budgetMs: number;

  constructor(
    private readonly vad: VoiceDetector,
    opts: DetectorOptions = {},
  ) {
    this.budgetMs = opts.budgetMs ?? DEFAULT_BUDGET_MS;
  }

  /** The decision, once made. */
  get decided(): Detection | null {
    return this.decision;
  }

  /** The greeting's end (once decided `machine`, and heard). */
  get greetingEnd(): GreetingEnd | null {
    return this.end;
  }

  /** Audio heard so far, ms. */
  get heardMs(): number {
    return this.frames * FRAME_MS;
  }

  /** The next samples of the callee's side; returns what they decided (the decision, the greeting's end), if anything new. */
  push(samples: Int16Array): { decision?: Detection; ended?: GreetingEnd } {
    const out: { decision?: Detection; ended?: GreetingEnd } = {};
    let at = 0;
    while (at < samples.length) {
      const n = Math.min(FRAME - this.pendingLength, samples.length - at);
      this.pending.set(samples.subarray(at, at + n), this.pendingLength);
      this.pendingLength += n;
      at += n;
      if (this.pendingLength < FRAME) break;
      this.pendingLength = 0;
      const before = { decision: this.decision, end: this.end };
      this.frame(this.pending);
      if (this.decision && !before.decision) out.decision = this.decision;
      if (this.end && !before.end) out.ended = this.end;
    }
    return out;
  }

  /** Frees the voice detector. */
  close(): void {
    this.vad.destroy();
  }

  private frame(frame: Int16Array): void {
    this.frames += 1;
    const now = this.frames * FRAME_MS;
    this.hearTone(frame, now);
    for (const e of this.vad.push(frame)) {
      if (e.type === 'speech_started') {
        if (this.runStart === null || this.runEnd === null || e.onset_ms - this.runEnd >= JOIN_MS) this.runStart = e.onset_ms;
        this.inSpeech = true;
      } else {
        this.runEnd = e.voiced_end_ms;
        this.inSpeech = false;
      }
    }
    if (!this.decision) this.decide(now);
    if (this.decision?.answeredBy === 'machine' && !this.end) this.watchEnd(now);
  }

  /** A beep: TONE_MS of one steady tone; it ends at its first frame without it. */
  private hearTone(frame: Int16Array, now: number): void {
    const hz = this.beepEndedAt === null || now - this.beepEndedAt > FRAME_MS ? toneOf(frame) : null;
    if (hz !== null && this.toneFrames > 0 && Math.abs(hz - this.toneHz) <= 2 * TONE_STEP_HZ) this.toneFrames += 1;
    else if (hz !== null) [this.toneHz, this.toneFrames] = [hz, 1];
    else {
      if (this.toneFrames * FRAME_MS >= TONE_MS) this.beepEndedAt = now - FRAME_MS;
      this.toneFrames = 0;
    }
    if (this.toneFrames * FRAME_MS >= TONE_MS) this.beepHeard = true;
  }

  private decide(now: number): void {
    const run = this.runStart === null ? 0 : (this.inSpeech ? now : (this.runEnd ?? now)) - this.runStart;
    if (this.beepHeard) return this.settle('machine', 'beep', now);
    if (this.inSpeech && run >= LONG_MS) return this.settle('machine', 'long_greeting', now);
    if (!this.inSpeech && this.runEnd !== null && now - this.runEnd >= HUMAN_SILENCE_MS) return this.settle('human', 'short_greeting', now);
    if (now < this.budgetMs) return;
    if (this.runStart === null) return this.settle('unknown', 'no_speech', now);
    // Still talking, not long yet (a stream that started late leaves less to hear): neither is sure.
    this.settle(run >= BUDGET_LONG_MS ? 'machine' : this.inSpeech ? 'unknown' : 'human', 'timeout', now);
  }

  private settle(answeredBy: AnsweredBy, detail: Detection['detail'], atMs: number): void {
    this.decision = { answeredBy, detail, atMs };
  }

  private watchEnd(now: number): void {
    if (this.beepEndedAt !== null) this.end = { by: 'beep', atMs: this.beepEndedAt };
    else if (this.toneFrames > 0)
      return; // a beep is sounding
    else if (!this.inSpeech && this.runEnd !== null && now - this.runEnd >= END_SILENCE_MS) this.end = { by: 'silence', atMs: now };
    else if (now >= MAX_GREETING_MS) this.end = { by: 'timeout', atMs: now };
  }
}

/** The voice detector's settings for the answering-machine detector: short pauses end a speech (the runs join them). */
export const AMD_VAD = { sampleRate: RATE, prefix_padding_ms: 0, silence_duration_ms: 240, min_speech_ms: 60, frame_ms: FRAME_MS } as const;
