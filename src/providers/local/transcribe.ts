// The offline speech-to-text engine behind `stt-local`, as a provider so a model's routes can put it
// anywhere in their failover order (alone by default; or behind a paid provider as a fallback that
// never fails for want of a network). Debian's pocketsphinx with its US English model
// (src/speech/pocketsphinx.ts), fed by ffmpeg decoding the upload to 16 kHz PCM
// (src/speech/ffmpeg.ts). English only, `transcribe` mode only: anything else is refused, so the
// router passes to the model's next route, or the request is answered 400.
// With `diarize`, the same PCM is kept and the offline diarizer labels the engine's segments.
import { decodeToPcm, AudioDecodeError } from '../../speech/ffmpeg.ts';
import { transcribePcm } from '../../speech/pocketsphinx.ts';
import { primaryLanguage } from '../../speech/languages.ts';
import { loadVoiceDetectors, type VoiceDetectors } from '../../speech/vad.ts';
import { UpstreamError, type TranscribeCapability, type Transcript, type TranscriptSegment } from '../types.ts';

/** Labels speech with speakers (src/speech/diarize.ts's `diarize`), given the whole recording as 16 kHz PCM. */
export type Diarizer = (
  pcm: Int16Array,
  sampleRate: 16000,
  segments: readonly { start: number; end: number }[],
  opts: { numSpeakers?: number },
) => { segments: { start: number; end: number; speaker: number }[] };

/** Each segment's speaker: the labelled span that overlaps it most (0 when none does). */
export function speakersFor(segments: readonly { start: number; end: number }[], labelled: readonly { start: number; end: number; speaker: number }[]): number[] {
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
      const keep = req.diarize === true && opts.diarizer !== undefined;
      const kept: Buffer[] = [];
      try {
        const pcm = decodeToPcm(req.audio.data ? { bytes: req.audio.data } : { path: req.audio.path }, { signal: abort.signal });
        const tee = async function* (): AsyncGenerator<Buffer> {
          for await (const chunk of pcm) {
            if (keep) kept.push(chunk);
            yield chunk;
          }
        };
        const t = await transcribePcm(tee(), { detectors: await voiceDetectors(), signal: abort.signal, ...(opts.tmpDir ? { tmpDir: opts.tmpDir } : {}) });
        const segments: TranscriptSegment[] = t.segments.map((s) => ({ start: s.start, end: s.end, text: s.text, ...(s.words ? { words: s.words } : {}) }));
        if (keep && segments.length > 0) {
          const all = Buffer.concat(kept);
          kept.length = 0;
          const samples = new Int16Array(all.buffer, all.byteOffset, all.length / 2);
          const found = opts.diarizer!(samples, 16000, segments, req.numSpeakers !== undefined ? { numSpeakers: req.numSpeakers } : {});
          const labels = speakersFor(segments, found.segments);
          segments.forEach((s, i) => (s.speaker = labels[i]));
        }
        const out: Transcript = { text: t.text, language: 'en', duration: t.duration, segments };
        return out;
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
