// Voice activity detection with OpenAI's `server_vad` semantics, on WebRTC's VAD (libfvad compiled
// to WASM, `@echogarden/fvad-wasm`): 8 or 16 kHz mono PCM16 in frames of 10, 20 or 30 ms, with
// no resampling of telephony audio.
//
// A frame counts as voiced when WebRTC's VAD says so AND its level is a margin above the noise
// floor. The energy gate is ours: on its own, WebRTC's VAD takes steady white noise at -55 dBFS
// for speech (measured on the codec2 and LibriVox clips: the gaps between utterances were never
// found), so a call with background hiss would never end a turn. On top, as OpenAI's turn
// detection reads:
// - speech starts once `min_speech_ms` of consecutive voiced frames are seen; `speech_started`
//   carries `audio_start_ms` = the first voiced frame − `prefix_padding_ms` (not before 0): where
//   the audio of the utterance begins, padding included.
// - speech stops once `silence_duration_ms` of consecutive unvoiced frames follow; `speech_stopped`
//   carries `audio_end_ms` = the end of that silence (the last voiced frame + the silence), the
//   end of the audio the utterance commits.
// - `threshold` (0–1, OpenAI's default 0.5: higher needs louder, clearer speech) sets both WebRTC's
//   aggressiveness mode, [0, 0.25) → 0 (quality), [0.25, 0.5) → 1 (low bitrate), [0.5, 0.75) → 2
//   (aggressive), [0.75, 1] → 3 (very aggressive), and the gate's margin, 3 dB + 6 dB × threshold
//   (6 dB at 0.5). WebRTC's VAD gives no probability, so the threshold cannot mean one.
// Line noise (issue 39): the floor follows a fall of the noise at once, a rise only as its 3 s
// window passes; so a rise that then holds steady (a line that gets noisier, comfort noise that
// gives way to the line's own hiss) is caught by its steadiness instead: speech varies in level
// from syllable to syllable, line noise does not. Measured above 200 Hz (the rumble below it
// moves the level of pink noise, and carries no telephone speech), a level that holds within
// STEADY_DB for STEADY_MS above the floor is the new floor, and what of it was taken for voice is
// not: a speech that began with it is not told (`speech_started` waits until the level has
// varied, at most ~240 ms after the onset, or the speech is dropped unheard), and a speech it
// followed (STEADY_UNDER_SPEECH_DB under its loudest) ends where it began. Before, a rise of
// -40 dBFS line noise over a -55 dBFS hiss was speech for 3 s: a turn of noise, a barge-in 400 ms
// in, a reply 1-2 s late. Known limit: a sound held that steady from its onset (a hummed "mmm")
// is taken for noise.
// Times are milliseconds of audio since the detector started (the session's audio clock).

import createFvad, { type FvadModule } from '@echogarden/fvad-wasm';

/**
 * `onset_ms`: the first voiced frame (`audio_start_ms` without the padding); `voiced_end_ms`: the
 * end of the last voiced frame (`audio_end_ms` without the silence that ended the speech).
 */
export type VadEvent =
  | { type: 'speech_started'; audio_start_ms: number; onset_ms: number }
  | { type: 'speech_stopped'; audio_end_ms: number; voiced_end_ms: number };

export interface ServerVadOptions {
  sampleRate: 8000 | 16000;
  /** 0–1, default 0.5; see the mapping above. */
  threshold?: number;
  /** Default 300 (OpenAI's). */
  prefix_padding_ms?: number;
  /** Default 500 (OpenAI's). */
  silence_duration_ms?: number;
  /** Voiced audio needed before speech counts as started; default 60 ms (filters clicks). */
  min_speech_ms?: number;
  /** WebRTC VAD frame: 10, 20 or 30 ms; default 20. */
  frame_ms?: 10 | 20 | 30;
}

export interface VoiceDetector {
  /** Takes the next samples; returns the events they complete, in order. */
  push(samples: Int16Array): VadEvent[];
  /** End of the audio: a speech still open stops here. */
  flush(): VadEvent[];
  readonly inSpeech: boolean;
  /**
   * Speech heard in the speech in progress, ms: its voiced frames and the pauses of at most
   * BRIDGE_MS between them (inside and between words), not longer pauses nor the silence after
   * the last voiced frame (the hang-over before it stops); 0 outside speech.
   */
  readonly voicedMs: number;
  /** Milliseconds of audio taken so far. */
  readonly audioMs: number;
  /**
   * Where a speech the detector has not told yet would begin (the `audio_start_ms` it would carry:
   * the first of the voiced frames it is weighing, less the prefix padding), ms; null when it weighs
   * none (a speech told, or none begun). Audio from here on may still be an utterance's.
   */
  readonly pendingStartMs: number | null;
  /** Changes `silence_duration_ms` from the next frame on (a call's turn may wait longer for digits). */
  setSilence(ms: number): void;
  /** Frees the WASM memory. */
  destroy(): void;
}

export interface VoiceDetectors {
  create(options: ServerVadOptions): VoiceDetector;
}

export class VadError extends Error {
  override name = 'VadError';
}

/** The fvad mode for an OpenAI `threshold`. */
export function fvadMode(threshold: number): 0 | 1 | 2 | 3 {
  if (!(threshold >= 0 && threshold <= 1)) throw new VadError('threshold must be between 0 and 1');
  return threshold < 0.25 ? 0 : threshold < 0.5 ? 1 : threshold < 0.75 ? 2 : 3;
}

/** The energy gate's margin above the noise floor for an OpenAI `threshold`: 3 dB at 0 to 9 dB at 1. */
export function gateMarginDb(threshold: number): number {
  return 3 + 6 * threshold;
}

// The noise floor (minimum statistics): the lowest 100 ms average level over the last 3 s of voiced
// frames, not below -70 dBFS (digital silence). It follows a change of background noise within 3 s, and stays
// under speech, whose pauses are quieter than its words. (A 1.5 s window cut the ends of
// LibriVox sentences by up to 0.5 s; 3 s keeps them within 0.2 s.)
const FLOOR_MIN_DB = -70;
/** A frame quieter than this is digital silence (zeros, a few LSBs of dither), not a line's quiet. */
const DIGITAL_SILENCE_DB = -90;
const SMOOTH_MS = 100;
const FLOOR_WINDOW_MS = 3000;
/** A pause this short inside a speech counts in its `voicedMs` (espeak's "wait I have a question": 340 of its first 600 ms voiced, 600 with the pauses). */
const BRIDGE_MS = 200;

/** A frame's RMS level in dB relative to full scale (-Infinity for digital silence). */
export function levelDb(samples: Int16Array): number {
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return 10 * Math.log10(sum / samples.length / (32768 * 32768));
}

/**
 * A noise-floor tracker: `level` takes a frame's level and answers the floor in dBFS; `now` answers
 * it without a frame; `raise` sets it (a steady rise).
 */
function noiseFloor(frameMs: number): { level(levelDb: number): number; now(): number; raise(db: number): void } {
  const smooth = new Float64Array(Math.max(1, Math.round(SMOOTH_MS / frameMs))); // recent frame powers
  const window = new Float64Array(Math.max(1, Math.round(FLOOR_WINDOW_MS / frameMs))).fill(Infinity); // smoothed levels
  let n = 0;
  let sum = 0;
  return {
    level(level) {
      const power = 10 ** (level / 10);
      sum += power - smooth[n % smooth.length]!;
      smooth[n % smooth.length] = power;
      const filled = Math.min(n + 1, smooth.length);
      window[n % window.length] = 10 * Math.log10(Math.max(sum, 0) / filled);
      n += 1;
      return this.now();
    },
    now() {
      let min = Infinity;
      for (const v of window) if (v < min) min = v;
      return Math.max(min, FLOOR_MIN_DB);
    },
    raise(db) {
      window.fill(db);
    },
  };
}

// A steady level (see above): 60 ms averages of the level above 200 Hz, held within 3 dB for
// 200 ms. Measured at 8 kHz: white and pink noise at -40 dBFS through μ-law hold so in every
// window (pink noise in 32 % of them without the high-pass); espeak's words ("yes please",
// "haan", "okaaay", "hmmmmmm", a sentence) and the codec2 and LibriVox speech in none but their
// pauses (which sit on the floor already).
const STEADY_MS = 200;
const STEADY_SMOOTH_MS = 60;
const STEADY_DB = 3;
const STEADY_HIGH_PASS_HZ = 200;
/**
 * Inside a speech, only a steady level this far below the speech's loudest is noise: words hold
 * steady too (the last "man" of LibriVox 0880 held -24 dBFS for 240 ms, 2 dB under its loudest),
 * -40 dBFS of line noise under speech at -20 is 20 dB below it.
 */
const STEADY_UNDER_SPEECH_DB = 12;

/** The steadiness of the level: `push` each frame; `range(k)` of the last k smoothed levels; `level` of the last STEADY_MS. */
function steadiness(frameMs: number, rate: number) {
  // A second-order Butterworth high-pass (RBJ's cookbook), its state carried across frames.
  const w0 = (2 * Math.PI * STEADY_HIGH_PASS_HZ) / rate;
  const alpha = Math.sin(w0) / Math.SQRT2;
  const a0 = 1 + alpha;
  const [b0, b1, a1, a2] = [(1 + Math.cos(w0)) / 2 / a0, -(1 + Math.cos(w0)) / a0, (-2 * Math.cos(w0)) / a0, (1 - alpha) / a0];
  let [x1, x2, y1, y2] = [0, 0, 0, 0];
  const smoothN = Math.max(1, Math.round(STEADY_SMOOTH_MS / frameMs));
  const windowN = Math.max(2, Math.round(STEADY_MS / frameMs));
  const band = new Float64Array(smoothN); // recent powers above the cut-off
  const smoothed = new Float64Array(windowN); // recent smoothed levels above it, dB
  const powers = new Float64Array(windowN); // recent frame powers (full band)
  let n = 0;
  return {
    smoothN,
    windowN,
    push(samples: Int16Array, level: number): void {
      let sum = 0;
      for (let i = 0; i < samples.length; i++) {
        const x = samples[i]!;
        const y = b0 * x + b1 * x1 + b0 * x2 - a1 * y1 - a2 * y2;
        [x2, x1, y2, y1] = [x1, x, y1, y];
        sum += y * y;
      }
      band[n % smoothN] = sum / samples.length;
      const filled = Math.min(n + 1, smoothN);
      let mean = 0;
      for (let i = 0; i < filled; i++) mean += band[i]!;
      smoothed[n % windowN] = 10 * Math.log10(mean / filled / (32768 * 32768) + 1e-12);
      powers[n % windowN] = 10 ** (level / 10);
      n += 1;
    },
    /** max − min of the last `k` smoothed levels (k ≤ windowN, and at most the frames taken), dB. */
    range(k: number): number {
      let [min, max] = [Infinity, -Infinity];
      for (let i = 1; i <= Math.min(k, n, windowN); i++) {
        const v = smoothed[(n - i) % windowN]!;
        [min, max] = [Math.min(min, v), Math.max(max, v)];
      }
      return max - min;
    },
    /** Whether the last STEADY_MS held (a full window, its levels within STEADY_DB). */
    get steady(): boolean {
      return n >= windowN + smoothN - 1 && this.range(windowN) <= STEADY_DB;
    },
    /** The latest smoothed level above the cut-off, dB. */
    last(): number {
      return smoothed[(n - 1) % windowN]!;
    },
    /** The full-band level of the last STEADY_MS, dBFS. */
    level(): number {
      let sum = 0;
      for (const p of powers) sum += p;
      return 10 * Math.log10(sum / windowN);
    },
  };
}

/** Loads the WASM module once; `create` then makes detectors that share it. */
export async function loadVoiceDetectors(): Promise<VoiceDetectors> {
  const fvad = await createFvad();
  return { create: (options) => createDetector(fvad, options) };
}

function createDetector(fvad: FvadModule, options: ServerVadOptions): VoiceDetector {
  const rate = options.sampleRate;
  if (rate !== 8000 && rate !== 16000) throw new VadError('sample rate must be 8000 or 16000');
  const frameMs = options.frame_ms ?? 20;
  if (frameMs !== 10 && frameMs !== 20 && frameMs !== 30) throw new VadError('frame_ms must be 10, 20 or 30');
  const prefixMs = options.prefix_padding_ms ?? 300;
  let silenceMs = options.silence_duration_ms ?? 500;
  const minSpeechMs = options.min_speech_ms ?? 60;
  for (const [name, v] of [
    ['prefix_padding_ms', prefixMs],
    ['silence_duration_ms', silenceMs],
    ['min_speech_ms', minSpeechMs],
  ] as const) {
    if (!Number.isFinite(v) || v < 0) throw new VadError(`${name} must be a number of milliseconds, 0 or more`);
  }
  const frame = (rate * frameMs) / 1000;
  const handle = fvad._fvad_new();
  if (handle === 0) throw new VadError('fvad_new failed');
  const framePtr = fvad._malloc(frame * 2);
  if (fvad._fvad_set_sample_rate(handle, rate) !== 0 || fvad._fvad_set_mode(handle, fvadMode(options.threshold ?? 0.5)) !== 0) {
    fvad._free(framePtr);
    fvad._fvad_free(handle);
    throw new VadError('fvad rejected its settings');
  }

  const pending = new Int16Array(frame); // a partial frame carried between pushes
  let pendingLength = 0;
  let frames = 0; // frames judged so far
  let inSpeech = false;
  /** The speech in progress has been told (`speech_started`); before, it may still prove a rise of the noise. */
  let told = false;
  let onsetFrame = 0; // the first voiced frame of the speech in progress
  let voicedRun = 0; // consecutive voiced frames (before speech starts)
  let silentRun = 0; // consecutive unvoiced frames (during speech)
  let voicedMs = 0; // voiced frames of the speech in progress, ms
  let voicedEndMs = 0; // the end of the last voiced frame
  let peakDb = -Infinity; // the loudest smoothed level (above the cut-off) of the speech in progress
  let floorHeardVoice = false; // the floor has learned from a frame WebRTC calls voiced
  let destroyed = false;

  const marginDb = gateMarginDb(options.threshold ?? 0.5);
  const floor = noiseFloor(frameMs);
  const steady = steadiness(frameMs, rate);
  const tell = (events: VadEvent[]): void => {
    told = true;
    const onset = onsetFrame * frameMs;
    events.push({ type: 'speech_started', audio_start_ms: Math.max(0, onset - prefixMs), onset_ms: onset });
  };
  const judge = (samples: Int16Array, events: VadEvent[]): void => {
    fvad.HEAP16.set(samples, framePtr >> 1);
    const webrtc = fvad._fvad_process(handle, framePtr, frame);
    if (webrtc < 0) throw new VadError('fvad_process failed');
    const level = levelDb(samples);
    // The floor learns from the frames WebRTC calls voiced (its window is their last 3 s). Until the
    // first of them it learns from the quiet ones too: the quiet before the first voice (a clean
    // line's, a synthetic voice's lead-in at -80..-65 dBFS) is what the first word stands on.
    // Without it the first word of a clean session taught the floor its own level and was voice only
    // where 6 dB louder than its start: festival's "yes please go ahead" began 320 ms late, without
    // its "yes", and the codec2 clips' first words (after -65 dBFS of quiet) the same (issue 40).
    // Digital silence (zero padding, a muted microphone) says nothing of the line and teaches
    // nothing: a recording's room tone after it is the floor, not voice.
    const learn = webrtc === 1 || (!floorHeardVoice && level > DIGITAL_SILENCE_DB);
    floorHeardVoice ||= webrtc === 1;
    const floorDb = learn ? floor.level(level) : floor.now();
    steady.push(samples, level);
    const voiced = webrtc === 1 && level >= floorDb + marginDb;
    frames += 1;
    const endMs = frames * frameMs;
    if (!inSpeech) {
      voicedRun = voiced ? voicedRun + 1 : 0;
      if (voicedRun * frameMs >= Math.max(minSpeechMs, frameMs)) {
        [inSpeech, told, silentRun] = [true, false, 0];
        onsetFrame = frames - voicedRun;
        peakDb = -Infinity;
        voicedMs = voicedRun * frameMs;
        voicedEndMs = endMs;
      }
    } else {
      if (voiced) {
        if (silentRun * frameMs <= BRIDGE_MS) voicedMs += silentRun * frameMs; // a short pause
        voicedMs += frameMs;
        voicedEndMs = endMs;
      }
      silentRun = voiced ? 0 : silentRun + 1;
    }
    if (inSpeech) peakDb = Math.max(peakDb, steady.last());
    if (inSpeech && !told) {
      // Told once its level varies (the levels after the onset's own average, free of the audio
      // before it); dropped, unheard, when it holds steady: the noise rose.
      const since = frames - onsetFrame - (steady.smoothN - 1);
      if (since > 0 && steady.range(since) > STEADY_DB) tell(events);
      else if (since >= steady.windowN) {
        floor.raise(steady.level());
        [inSpeech, voicedRun, voicedMs] = [false, 0, 0];
        return;
      }
    } else if (steady.steady && steady.level() >= floorDb + marginDb && (!inSpeech || steady.last() <= peakDb - STEADY_UNDER_SPEECH_DB)) {
      // The noise rose and holds: the floor from now on; in a speech, its voice ended where the
      // steady audio began.
      floor.raise(steady.level());
      voicedRun = 0;
      const from = endMs - (steady.windowN + steady.smoothN - 1) * frameMs;
      if (inSpeech && voicedEndMs > from) {
        voicedEndMs = Math.max(from, onsetFrame * frameMs);
        silentRun = Math.round((endMs - voicedEndMs) / frameMs);
      }
    }
    if (inSpeech && silentRun * frameMs >= Math.max(silenceMs, frameMs)) {
      if (!told) tell(events);
      [inSpeech, voicedRun, voicedMs] = [false, 0, 0];
      events.push({ type: 'speech_stopped', audio_end_ms: endMs, voiced_end_ms: voicedEndMs });
    }
  };

  return {
    push(samples) {
      if (destroyed) throw new VadError('detector destroyed');
      const events: VadEvent[] = [];
      let at = 0;
      if (pendingLength > 0) {
        const take = Math.min(frame - pendingLength, samples.length);
        pending.set(samples.subarray(0, take), pendingLength);
        pendingLength += take;
        at = take;
        if (pendingLength < frame) return events;
        judge(pending, events);
        pendingLength = 0;
      }
      for (; at + frame <= samples.length; at += frame) judge(samples.subarray(at, at + frame), events);
      pending.set(samples.subarray(at), 0);
      pendingLength = samples.length - at;
      return events;
    },
    flush() {
      const events: VadEvent[] = [];
      if (inSpeech) {
        if (!told) tell(events); // the last words before the end: told, however short
        inSpeech = false;
        voicedMs = 0;
        events.push({ type: 'speech_stopped', audio_end_ms: Math.round(frames * frameMs + (pendingLength * 1000) / rate), voiced_end_ms: voicedEndMs });
      }
      return events;
    },
    get inSpeech() {
      return inSpeech && told;
    },
    get voicedMs() {
      return inSpeech && told ? voicedMs : 0;
    },
    get audioMs() {
      return frames * frameMs + (pendingLength * 1000) / rate;
    },
    get pendingStartMs() {
      if (inSpeech && told) return null;
      const first = inSpeech ? onsetFrame : voicedRun > 0 ? frames - voicedRun : null;
      return first === null ? null : Math.max(0, first * frameMs - prefixMs);
    },
    setSilence(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new VadError('silence_duration_ms must be a number of milliseconds, 0 or more');
      silenceMs = ms;
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      fvad._free(framePtr);
      fvad._fvad_free(handle);
    },
  };
}
