// The offline speech-to-text engine behind `stt-local`, as a provider so a model's routes can put it
// anywhere in their failover order (alone by default; or behind a paid provider as a fallback that
// never fails for want of a network). Debian's pocketsphinx with its US English model
// (src/speech/pocketsphinx.ts), fed by ffmpeg decoding the upload to 16 kHz PCM
// (src/speech/ffmpeg.ts), or with the PCM a sync call decoded already. English only, `transcribe`
// mode only: anything else is refused, so the router passes to the model's next route, or the
// request is answered 400.
// With `diarize`, the offline diarizer labels the engine's segments, reading the PCM the engine
// wrote to disk a segment at a time: memory stays bounded whatever the recording's length.
// An utterance held in memory (a call's turn, a realtime socket's utterance: a short PCM WAV) goes
// to the warm engines (`engines`, src/speech/engine-pool.ts) instead, resampled here: no ffmpeg and
// no model load per utterance.
import type { PcmSource } from '../../speech/diarize.ts';
import { decodeToPcm, AudioDecodeError, PCM_BYTES_PER_SECOND } from '../../speech/ffmpeg.ts';
import { openPcmFile } from '../../speech/pcm.ts';
import { transcribePcmWith } from '../../speech/pocketsphinx.ts';
import { primaryLanguage } from '../../speech/languages.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../../speech/vad.ts';
import type { EnginePool } from '../../speech/engine-pool.ts';
import type { LanguageModels } from '../../speech/language-models.ts';
import { loadResamplers, type Resamplers } from '../../speech/resample.ts';
import { foldsFor, foldUpperBand } from '../../speech/bandwidth.ts';
import { joinSegmentTexts } from '../../speech/transcript.ts';
import { WAV_PCM, readWavHeader } from '../../speech/wav.ts';
import { biasOf } from '../../speech/nbest.ts';
import { samplesOf } from '../../speech/pcm.ts';
import { UpstreamError, type TranscribeCapability, type TranscribeRequest, type Transcript, type TranscriptSegment } from '../types.ts';

/** Labels speech with speakers (src/speech/diarize.ts's `diarizeSource`), given the recording as 16 kHz PCM read a span at a time. */
export type Diarizer = (
  pcm: PcmSource,
  sampleRate: 16000,
  segments: readonly { start: number; end: number }[],
  opts: { numSpeakers?: number },
) => Promise<{ segments: { start: number; end: number; speaker: number }[] }>;

/** Each segment's speaker: the labelled span that overlaps it most (0 when none does). */
export function speakersFor(
  segments: readonly { start: number; end: number }[],
  labelled: readonly { start: number; end: number; speaker: number }[],
): number[] {
  return segments.map((s) => {
    let best = 0;
    let most = 0;
    for (const l of labelled) {
      const overlap = Math.min(s.end, l.end) - Math.max(s.start, l.start);
      if (overlap > most) {
        most = overlap;
        best = l.speaker;
      }
    }
    return best;
  });
}

/** PCM in one-second pieces, as ffmpeg's pipe would give it (the recogniser takes it as it comes). */
async function* slices(pcm: Uint8Array, signal: AbortSignal): AsyncGenerator<Uint8Array> {
  for (let at = 0; at < pcm.length; at += PCM_BYTES_PER_SECOND) {
    signal.throwIfAborted();
    yield pcm.subarray(at, at + PCM_BYTES_PER_SECOND);
  }
}

export interface LocalOptions {
  /** Absent: `diarize` requests are answered without speaker labels (every segment SPEAKER_00). */
  diarizer?: Diarizer;
  /** Where the recogniser keeps the audio it works on: the gateway's tmp area (the OS temp dir when absent: tests). */
  tmpDir?: string;
  /** Warm engines for utterances held in memory; absent: each request starts an engine of its own. */
  engines?: EnginePool;
  /** The conversations' language models (a call's turn names its domain and expectation). */
  languageModels?: LanguageModels;
}

/**
 * How long a call's utterance waits for its pack's language models still being built: their first
 * build takes about 2 s, started as the call is placed, but several times that on a loaded machine.
 */
const DOMAIN_WAIT_MS = 10_000;

/** The longest utterance the warm engines take (a call's is 15 s; a realtime socket's up to its max). */
const MAX_UTTERANCE_S = 30;

/** An in-memory 16-bit mono PCM WAV of at most MAX_UTTERANCE_S at 8 or 16 kHz: its samples; null for anything else. */
function utteranceOf(data: Uint8Array | undefined): { samples: Int16Array; rate: 8000 | 16000 } | null {
  if (!data) return null;
  const h = readWavHeader(Buffer.from(data.buffer, data.byteOffset, data.length));
  if (h === null || h === 'more' || h.format !== WAV_PCM || h.channels !== 1 || h.bitsPerSample !== 16) return null;
  if (h.sampleRate !== 8000 && h.sampleRate !== 16000) return null;
  const body = data.subarray(h.dataOffset, data.length - ((data.length - h.dataOffset) % 2));
  if (body.length / 2 / h.sampleRate > MAX_UTTERANCE_S) return null;
  return { samples: samplesOf(body), rate: h.sampleRate };
}

export function localTranscribe(opts: LocalOptions = {}): TranscribeCapability {
  // The VAD that cuts the audio into utterances for the recogniser: WASM, loaded once, on first use.
  let detectors: Promise<VoiceDetectors> | null = null;
  const voiceDetectors = () => (detectors ??= loadVoiceDetectors());
  let resamplers: Promise<Resamplers> | null = null;
  /** An utterance on the warm engines: 8 kHz brought to the engine's 16 kHz (SpeexDSP, quality 5, as the realtime path). */
  /**
   * How many readings of a call's turn the agent may look through: with 50, the first one it
   * understood was the right answer for 95 % of spoken yes/no answers over μ-law (80 % for the first
   * best), 100 % of amounts (90 %), 58 % of complaints (51 %); 10 gave 90 / 100 / 56 % (`npm run eval:understanding`).
   */
  const ALTERNATIVES = 50;
  const onWarmEngine = async (
    engines: EnginePool,
    u: { samples: Int16Array; rate: 8000 | 16000 },
    context: TranscribeRequest['context'],
    signal: AbortSignal,
  ): Promise<Transcript> => {
    let pcm = u.samples;
    if (u.rate === 8000) {
      const r = (await (resamplers ??= loadResamplers())).create({ from: 8000, to: 16000, quality: 5 });
      try {
        const head = r.process(u.samples);
        const tail = r.flush();
        pcm = new Int16Array(head.length + tail.length);
        pcm.set(head);
        pcm.set(tail, head.length);
      } finally {
        r.destroy();
      }
    }
    // A call's turn: its pack's language model for what the agent asked (src/speech/language-models.ts).
    const model = context?.domain ? await opts.languageModels?.modelWhenReady(context.domain, context.expect, DOMAIN_WAIT_MS) : null;
    const duration = Math.round((u.samples.length / u.rate) * 1000) / 1000;
    if (model) {
      // An open request over the telephone band: its upper band made up for the 16 kHz model (bandwidth.ts).
      if (u.rate === 8000 && foldsFor(context?.expect)) pcm = foldUpperBand(pcm);
      // A call's turn: its readings, for the agent to answer the first it understands (its text the first best's).
      const alternatives = (await engines.alternatives(pcm, signal, model)).slice(0, ALTERNATIVES).map((w) => w.join(' '));
      const text = alternatives[0] ?? '';
      return { text, language: 'en', duration, segments: text ? [{ start: 0, end: duration, text }] : [], alternatives };
    }
    const segments = await engines.decode(pcm, signal);
    return { text: joinSegmentTexts(segments), language: 'en', duration, segments };
  };
  return {
    refuses(req) {
      if (req.mode !== 'transcribe') return { param: 'mode', message: `The offline engine only transcribes (mode 'transcribe'), not '${req.mode}'.` };
      if (req.language !== undefined && primaryLanguage(req.language) !== 'en') {
        return { param: 'language_code', message: `The offline engine recognises English only, not '${req.language}'.` };
      }
      return undefined;
    },
    // `req.context` (RecognitionContext: the client's prompt and key terms, a call's question,
    // expected answer and pack's domain) arrives here on both paths; a call's utterance on the warm
    // engines is decoded with its pack's language model for the expected answer (onWarmEngine).
    async transcribe(route, req, signal) {
      const abort = new AbortController();
      const onCancel = () => abort.abort(new Error('cancelled'));
      if (signal.aborted) onCancel();
      else signal.addEventListener?.('abort', onCancel, { once: true });
      const diarizer = req.diarize === true ? opts.diarizer : undefined;
      try {
        // A client's prompt or key terms (not a call's turn: its pack's models are its context) are
        // heard by an engine of the request's own that writes each utterance's N best (nbest.ts).
        const bias = req.context?.domain ? null : biasOf(req.context);
        const utterance = opts.engines && req.diarize !== true && !bias ? utteranceOf(req.audio.data) : null;
        if (opts.engines && utterance) return await onWarmEngine(opts.engines, utterance, req.context, abort.signal);
        // PCM the gateway decoded already (a sync call) is taken as it is; otherwise a recording whose
        // length was measured is decoded no further (a second past it, to be sure).
        const limit = req.audio.durationS !== undefined ? { maxSeconds: Math.ceil(req.audio.durationS) + 1 } : {};
        const pcm = req.audio.pcm
          ? slices(req.audio.pcm, abort.signal)
          : decodeToPcm(req.audio.data ? { bytes: req.audio.data } : { path: req.audio.path }, { signal: abort.signal, ...limit });
        return await transcribePcmWith(
          pcm,
          {
            detectors: await voiceDetectors(),
            signal: abort.signal,
            // The client's prompt and key terms favour the words they name (src/speech/nbest.ts).
            bias,
            ...(opts.tmpDir ? { tmpDir: opts.tmpDir } : {}),
          },
          async (t, audioFile) => {
            const segments: TranscriptSegment[] = t.segments.map((s) => ({ start: s.start, end: s.end, text: s.text, ...(s.words ? { words: s.words } : {}) }));
            if (diarizer && segments.length > 0) {
              const file = openPcmFile(audioFile);
              try {
                const found = await diarizer(file, 16000, segments, req.numSpeakers !== undefined ? { numSpeakers: req.numSpeakers } : {});
                const labels = speakersFor(segments, found.segments);
                segments.forEach((s, i) => (s.speaker = labels[i]));
              } finally {
                file.close();
              }
            }
            const out: Transcript = { text: t.text, language: 'en', duration: t.duration, segments };
            return out;
          },
        );
      } catch (err) {
        if (signal.aborted) throw new UpstreamError('aborted', `${route.id}: cancelled`, false);
        if (err instanceof AudioDecodeError) throw new UpstreamError('client', `${route.id}: ${err.message}`, false, 400, 'The audio could not be decoded.');
        throw new UpstreamError('connect', `${route.id}: the offline engine failed: ${(err as Error).message}`, true);
      } finally {
        signal.removeEventListener?.('abort', onCancel);
      }
    },
  };
}
