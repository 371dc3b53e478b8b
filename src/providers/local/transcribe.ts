// The offline speech-to-text engine behind `stt-local`, as a provider so a model's routes can put it
// anywhere in their failover order (alone by default; or behind a paid provider as a fallback that
// never fails for want of a network). Debian's pocketsphinx with its US English model
// (src/speech/pocketsphinx.ts), fed by ffmpeg decoding the upload to 16 kHz PCM
// (src/speech/ffmpeg.ts), or with the PCM a sync call decoded already. English only, `transcribe`
// mode only: anything else is refused, so the router passes to the model's next route, or the
// request is answered 400.
// With `diarize`, the offline diarizer labels the engine's segments, reading the PCM the engine
// wrote to disk a segment at a time: memory stays bounded whatever the recording's length.
import type { PcmSource } from '../../speech/diarize.ts';
import { decodeToPcm, AudioDecodeError, PCM_BYTES_PER_SECOND } from '../../speech/ffmpeg.ts';
import { openPcmFile } from '../../speech/pcm.ts';
import { transcribePcmWith } from '../../speech/pocketsphinx.ts';
import { primaryLanguage } from '../../speech/languages.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../../speech/vad.ts';
import { UpstreamError, type TranscribeCapability, type Transcript, type TranscriptSegment } from '../types.ts';

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
}

export function localTranscribe(opts: LocalOptions = {}): TranscribeCapability {
  // The VAD that cuts the audio into utterances for the recogniser: WASM, loaded once, on first use.
  let detectors: Promise<VoiceDetectors> | null = null;
  const voiceDetectors = () => (detectors ??= loadVoiceDetectors());
  return {
    refuses(req) {
      if (req.mode !== 'transcribe') return { param: 'mode', message: `The offline engine only transcribes (mode 'transcribe'), not '${req.mode}'.` };
      if (req.language !== undefined && primaryLanguage(req.language) !== 'en') {
        return { param: 'language_code', message: `The offline engine recognises English only, not '${req.language}'.` };
      }
      return undefined;
    },
    async transcribe(route, req, signal) {
      const abort = new AbortController();
      const onCancel = () => abort.abort(new Error('cancelled'));
      if (signal.aborted) onCancel();
      else signal.addEventListener?.('abort', onCancel, { once: true });
      const diarizer = req.diarize === true ? opts.diarizer : undefined;
      try {
        // PCM the gateway decoded already (a sync call) is taken as it is; otherwise a recording whose
        // length was measured is decoded no further (a second past it, to be sure).
        const limit = req.audio.durationS !== undefined ? { maxSeconds: Math.ceil(req.audio.durationS) + 1 } : {};
        const pcm = req.audio.pcm
          ? slices(req.audio.pcm, abort.signal)
          : decodeToPcm(req.audio.data ? { bytes: req.audio.data } : { path: req.audio.path }, { signal: abort.signal, ...limit });
        return await transcribePcmWith(
          pcm,
          { detectors: await voiceDetectors(), signal: abort.signal, ...(opts.tmpDir ? { tmpDir: opts.tmpDir } : {}) },
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
