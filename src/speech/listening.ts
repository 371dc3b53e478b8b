// The listening stage shared by a realtime socket (src/realtime/session.ts) and a call's live side
// (src/voice/listening.ts): the audio it is fed (16-bit PCM at one rate) is kept in an
// `AudioBuffer` only as far back as an utterance may need it, goes through the voice detector
// (server VAD, src/speech/vad.ts) and is cut into utterances, which its owner gets through
// `RecognitionHooks` (then recognises them, its own way). The shape of LiveKit Agents'
// `AudioRecognition` behind its `RecognitionHooks`: the owner feeds samples, the stage tells it
// speech started and an utterance is ready.
// An utterance ends with the endpointing silence (settable while listening: a call waits longer
// for digits), at the longest utterance (the rest of the speech a new one), when the owner
// commits (a realtime client's `input_audio_buffer.commit`), or when the owner ends the audio
// (`flush`: a call's line hung up in the middle of a sentence). Without a detector (turn detection
// off) the owner commits; what it never commits is cut at the longest utterance.
// Times are in samples of the stage's audio clock (every sample fed since it was built); the
// detector's own clock restarts with it (`vadOriginMs`).
import { AudioBuffer } from './audio-buffer.ts';
import type { VadEvent, VoiceDetector, VoiceDetectors } from './vad.ts';

/** The detector's settings (OpenAI's server_vad); `threshold` absent: the detector's default. */
export interface Detection {
  threshold?: number;
  prefixPaddingMs: number;
  silenceMs: number;
}

/**
 * Samples [from, to) of the stage's clock, copied out of the buffer; the voice in them is
 * [voiceFrom, voiceTo): from the first voiced frame to the end of the last (without the prefix
 * padding and the endpointing silence; all of it without a detector).
 */
export interface HeardUtterance {
  from: number;
  to: number;
  voiceFrom: number;
  voiceTo: number;
  samples: Int16Array;
}

/** Why an utterance ended: the endpointing silence, the longest utterance, the owner's commit, or the end of the audio (`flush`). */
export type UtteranceEnd = 'silence' | 'longest' | 'commit' | 'end';

export interface RecognitionHooks {
  /** Speech begins at sample `start` (its prefix padding included); after a cut at the longest utterance too. */
  speechStarted?(start: number): void;
  /** An utterance is ready (called before the stage moves on: the owner may end itself in it). */
  utterance(u: HeardUtterance, why: UtteranceEnd): void;
}

export interface ListenerOptions {
  rate: 8000 | 16000;
  detectors: VoiceDetectors;
  /** Null: no detector, the owner commits. */
  detection: Detection | null;
  /** Speech (or an uncommitted buffer) this long is cut: the rest is a new utterance. Infinity: never. */
  maxUtteranceMs: number;
  /** The buffer's size, ms: the longest utterance, its padding and some headroom. */
  bufferMs: number;
  /** Audio kept before speech beyond the prefix padding (the detector's onset lag), ms. */
  keepExtraMs: number;
  /**
   * Whether an utterance may begin inside the one before it (its prefix padding reaching back into
   * it): a realtime socket's may; a call's starts where the one before ended (the buffer is trimmed there).
   */
  overlap: boolean;
}

export class Listener {
  readonly rate: 8000 | 16000;
  private readonly buffer: AudioBuffer;
  private detection: Detection | null;
  private vad: VoiceDetector | null;
  /** Stage ms at which the current detector started (its clock is relative to it). */
  private vadOriginMs = 0;
  /** The current speech's start (with a detector), in samples; null when none. */
  private speechStart: number | null = null;
  /** Where the current speech's voice begins (its first voiced frame, or the cut at the longest utterance), in samples. */
  private voiceFrom = 0;
  /** Without a detector: where the uncommitted buffer begins, in samples. */
  private manualStart = 0;
  private closed = false;

  constructor(
    private readonly options: ListenerOptions,
    private readonly hooks: RecognitionHooks,
  ) {
    this.rate = options.rate;
    this.buffer = new AudioBuffer(Math.ceil((options.bufferMs * options.rate) / 1000));
    this.detection = options.detection;
    this.vad = this.newDetector();
  }

  /** Samples fed so far (the stage's clock). */
  get total(): number {
    return this.buffer.total;
  }

  /** Audio fed so far, ms. */
  get audioMs(): number {
    return (this.buffer.total * 1000) / this.rate;
  }

  /** Whether a detector listens (turn detection on). */
  get detecting(): boolean {
    return this.vad !== null;
  }

  /** A speech is in progress (heard started, not yet ended). */
  get speaking(): boolean {
    return this.speechStart !== null;
  }

  /** Where the audio not yet made an utterance begins: the speech in progress, or the uncommitted buffer; null: none. */
  get openStart(): number | null {
    return this.vad ? this.speechStart : this.manualStart;
  }

  /**
   * Voiced audio the detector has heard in the speech in progress, ms (what a barge-in weighs: not
   * the silences between words, nor the hang-over after the last, nor the size of the chunks it
   * came in); null outside speech.
   */
  get voicedMs(): number | null {
    const vad = this.vad;
    return vad?.inSpeech ? vad.voicedMs : null;
  }

  /** The endpointing silence, from the detector's next frame on. */
  setSilence(ms: number): void {
    this.vad?.setSilence(ms);
  }

  /** The next samples: kept, detected; the utterances they complete go to the hooks. */
  push(samples: Int16Array): void {
    const at = this.buffer.total;
    this.buffer.append(samples);
    const nowSample = at + samples.length;
    if (this.vad) this.detect(this.vad, samples, nowSample);
    else if (this.buffer.total - this.manualStart >= this.samplesOf(this.options.maxUtteranceMs)) {
      const from = this.manualStart;
      this.manualStart = this.buffer.total; // a client that never commits: cut at the limit
      const to = this.buffer.total;
      this.hooks.utterance({ from, to, voiceFrom: from, voiceTo: to, samples: this.buffer.slice(from, to) }, 'longest');
    }
    if (!this.vad || this.speechStart === null) this.trim();
  }

  /** The owner commits: the open audio (see `openStart`) becomes an utterance; the detector starts again. */
  commit(): void {
    const from = this.openStart;
    if (from === null) return;
    const to = this.buffer.total;
    const voiceFrom = this.vad && this.speechStart !== null ? this.voiceFrom : from;
    this.hooks.utterance({ from, to, voiceFrom, voiceTo: to, samples: this.buffer.slice(from, to) }, 'commit');
    if (this.vad)
      this.restart(); // the speech committed by hand is over for the detector
    else this.manualStart = this.buffer.total;
  }

  /**
   * The end of the audio (a call's line hung up): the speech in progress, however short its
   * silence, becomes an utterance ('end'). Audio the detector never took for speech is not one.
   */
  flush(): void {
    if (this.vad) this.stopped(this.vad.flush(), this.buffer.total, 'end');
  }

  /** Drops what is buffered and not made an utterance. */
  clear(): void {
    this.manualStart = this.buffer.total;
    if (this.vad) this.restart();
    this.buffer.trim(this.buffer.total);
  }

  /** New detector settings (null: the owner commits); the speech in progress is dropped. */
  setDetection(detection: Detection | null): void {
    this.detection = detection;
    this.manualStart = this.buffer.total;
    this.restart();
  }

  /** Frees the detector (idempotent). */
  close(): void {
    this.closed = true;
    this.vad?.destroy();
    this.vad = null;
  }

  private samplesOf(ms: number): number {
    return Math.round((ms * this.rate) / 1000);
  }

  private newDetector(): VoiceDetector | null {
    const d = this.detection;
    if (!d || this.closed) return null;
    return this.options.detectors.create({
      sampleRate: this.rate,
      ...(d.threshold !== undefined ? { threshold: d.threshold } : {}),
      prefix_padding_ms: d.prefixPaddingMs,
      silence_duration_ms: d.silenceMs,
    });
  }

  private restart(): void {
    this.vad?.destroy();
    this.vadOriginMs = this.audioMs;
    this.vad = this.newDetector();
    this.speechStart = null;
  }

  private detect(vad: VoiceDetector, samples: Int16Array, nowSample: number): void {
    this.stopped(vad.push(samples), nowSample, 'silence');
    // Speech that goes on past the longest utterance: it is cut there, the rest is a new one.
    if (this.speechStart !== null && nowSample - this.speechStart >= this.samplesOf(this.options.maxUtteranceMs)) {
      const from = this.speechStart;
      const voiceFrom = this.voiceFrom;
      this.speechStart = this.voiceFrom = nowSample;
      this.hooks.utterance({ from, to: nowSample, voiceFrom, voiceTo: nowSample, samples: this.buffer.slice(from, nowSample) }, 'longest');
      this.hooks.speechStarted?.(nowSample);
    }
  }

  /** The detector's events: a speech begins, or ends (`why`: its silence, or the end of the audio) as an utterance. */
  private stopped(events: VadEvent[], nowSample: number, why: 'silence' | 'end'): void {
    for (const e of events) {
      if (e.type === 'speech_started') {
        // audio_start_ms includes the prefix padding already.
        this.speechStart = Math.max(this.buffer.first, this.samplesOf(this.vadOriginMs + e.audio_start_ms));
        this.voiceFrom = Math.max(this.speechStart, this.samplesOf(this.vadOriginMs + e.onset_ms));
        this.hooks.speechStarted?.(this.speechStart);
      } else if (this.speechStart !== null) {
        const from = this.speechStart;
        const to = Math.min(nowSample, this.samplesOf(this.vadOriginMs + e.audio_end_ms));
        const voiceFrom = Math.min(this.voiceFrom, to);
        const voiceTo = Math.max(voiceFrom, Math.min(to, this.samplesOf(this.vadOriginMs + e.voiced_end_ms)));
        this.speechStart = null;
        const samples = this.buffer.slice(from, to);
        if (!this.options.overlap) this.buffer.trim(to);
        this.hooks.utterance({ from, to, voiceFrom, voiceTo, samples }, why);
      }
    }
  }

  /**
   * Keeps only what a coming utterance may need: its prefix padding (and `keepExtraMs`) before now,
   * and back to the start of a speech the detector weighs and has not told yet (its onset may be up
   * to ~300 ms back: min_speech_ms, the steadiness check, the chunk it came in). Trimmed from now
   * alone, a call's utterance (`keepExtraMs` 0) lost that much of its padding and, where the
   * detector found the voice late, the first word (issue 40).
   */
  private trim(): void {
    const vad = this.vad;
    if (!vad) return this.buffer.trim(this.manualStart);
    let from = this.buffer.total - this.samplesOf((this.detection?.prefixPaddingMs ?? 0) + this.options.keepExtraMs);
    const pending = vad.pendingStartMs;
    if (pending !== null) from = Math.min(from, this.samplesOf(this.vadOriginMs + pending));
    this.buffer.trim(from);
  }
}
