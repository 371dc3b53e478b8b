// What turns a socket's committed utterances into text. Two ways, chosen by the model's first route:
// - streaming (`local`, stt-local): one resident pocketsphinx engine per socket, fed every sample
//   as it arrives (resampled to 16 kHz from 8 kHz); an utterance is decoded the moment it is
//   committed, from the audio the engine already holds. pocketsphinx_batch gives no partial
//   hypotheses, so an utterance's text comes whole, when it is committed (one delta, then completed).
// - utterance mode (any other stt route): each committed utterance is sent through the sync path,
//   `router.transcribe` on a small WAV held in memory (no file: a temp file per utterance cost ~12%
//   of the gateway's CPU at 150 sessions), with the model's routes in order: failover happens
//   between utterances (each is its own call), never inside one.
import type { Heard, RecognitionContext, TranscribeRequest, Transcript } from '../providers/types.ts';
import { utteranceRequest } from '../providers/utterance.ts';
import { biasOf } from '../speech/nbest.ts';
import { bytesOf } from '../speech/pcm.ts';
import type { UtteranceEngine } from '../speech/pocketsphinx-engine.ts';
import type { Resampler, Resamplers } from '../speech/resample.ts';
import type { TranscriptSegment } from '../speech/transcript.ts';
import { withSignal } from '../shared/signals.ts';

export interface Utterance {
  itemId: string;
  /** Session audio clock, ms. */
  startMs: number;
  endMs: number;
  /** Its samples at the session's rate (read once, when needed). */
  samples(): Int16Array;
  /** The session's prompt and key terms when it was committed (`input_audio_transcription`). */
  context?: RecognitionContext;
}

/** Times in seconds of session audio. */
export interface Recognised {
  text: string;
  start: number;
  end: number;
}

export interface SessionRecogniser {
  readonly mode: 'streaming' | 'utterance';
  /** Every sample of the session, in order (at the session's rate). */
  audio(samples: Int16Array): void;
  /**
   * Recognises a committed utterance; called in commit order, after the audio it covers. Where the
   * upstream streams its text, what it hears of it goes to `onHeard` before the answer (which then
   * holds the whole text).
   */
  recognise(utterance: Utterance, signal: AbortSignal, onHeard?: (heard: Heard) => void): Promise<Recognised>;
  /** Where what is heard of the speech not yet committed goes (upstreams with partial results). */
  listen?(onHeard: (heard: Heard) => void): void;
  /** Stops the engine (idempotent). */
  close(): void;
}

/** Text and bounds of an utterance from its segments (the utterance's own bounds when none). */
function fromSegments(segments: readonly Pick<TranscriptSegment, 'start' | 'end' | 'text'>[], u: Utterance, offsetS: number): Recognised {
  const spoken = segments.filter((s) => s.text.trim() !== '');
  if (spoken.length === 0) return { text: '', start: u.startMs / 1000, end: u.endMs / 1000 };
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return { text: spoken.map((s) => s.text.trim()).join(' '), start: r(offsetS + spoken[0]!.start), end: r(offsetS + spoken.at(-1)!.end) };
}

/**
 * stt-local streaming. The engine starts with the first audio (an idle socket costs no process;
 * its model loads in ~0.5 s meanwhile); audio and decodes wait for it in order. A failed start fails
 * every later call.
 */
export function streamingLocalRecogniser(opts: { rate: 8000 | 16000; startEngine: () => Promise<UtteranceEngine>; resamplers: Resamplers }): SessionRecogniser {
  const resampler: Resampler | null = opts.rate === 16000 ? null : opts.resamplers.create({ from: opts.rate, to: 16000, quality: 5 });
  let engine: UtteranceEngine | null = null;
  let failed: unknown = null;
  let closed = false;
  let chain: Promise<unknown> | null = null;
  const started = (): Promise<unknown> =>
    (chain ??= opts.startEngine().then(
      (e) => {
        engine = e;
        if (closed) e.abort();
      },
      (err: unknown) => {
        failed = err;
      },
    ));
  let frames16k = 0; // 10 ms frames handed to the engine (a partial one not counted)
  let samples16k = 0;
  return {
    mode: 'streaming',
    audio(samples) {
      if (closed || failed) return;
      const pcm = resampler ? resampler.process(samples) : samples;
      samples16k += pcm.length;
      frames16k = Math.floor(samples16k / 160);
      const bytes = bytesOf(pcm.slice());
      // One append at a time (the engine's file write pushes back); decodes queue behind them.
      chain = started().then(() => (engine && !failed ? engine.append(bytes).catch((err: unknown) => void (failed ??= err)) : undefined));
    },
    // The utterance's context (u.context: the session's prompt and key terms) favours the words it
    // names among the utterance's N best (src/speech/nbest.ts).
    recognise(u, signal) {
      const start = Math.floor(u.startMs / 10);
      const end = Math.min(Math.ceil(u.endMs / 10), frames16k);
      let answer: Promise<TranscriptSegment[]> = Promise.reject(new Error('the offline engine is closed'));
      answer.catch(() => {});
      const asked = started().then(() => {
        if (failed) answer = Promise.reject(failed);
        else if (engine) answer = engine.decode(start, end, undefined, biasOf(u.context)); // asked now; answered later, audio keeps flowing
        answer.catch(() => {});
      });
      chain = asked;
      return withSignal(
        asked.then(() => answer),
        signal,
      ).then((segments) => fromSegments(segments, u, 0));
    },
    close() {
      if (closed) return;
      closed = true;
      engine?.abort();
      resampler?.destroy();
    },
  };
}

/** Utterance mode: each utterance through `transcribe` (the router over the model's routes). */
export function utteranceRecogniser(opts: {
  rate: 8000 | 16000;
  language?: string;
  transcribe(req: TranscribeRequest, signal: AbortSignal): Promise<Transcript>;
}): SessionRecogniser {
  return {
    mode: 'utterance',
    audio() {},
    async recognise(u, signal) {
      const t = await opts.transcribe(utteranceRequest(u.samples(), opts.rate, (u.endMs - u.startMs) / 1000, opts.language, u.context), signal);
      const out = fromSegments(t.segments, u, u.startMs / 1000);
      return t.segments.length === 0 ? { ...out, text: t.text.trim() } : out;
    },
    close() {},
  };
}
