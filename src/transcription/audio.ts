// What the gateway learns of an uploaded recording before any provider sees it: its container, from
// its bytes (never its name), and its exact decoded duration, which is what the client is billed
// for; both from one ffmpeg run.
import { ApiError } from '../errors.ts';
import { AudioDecodeError, decodedPcmBytes, decodeToPcm, pcmSeconds } from '../speech/ffmpeg.ts';

/** The content type a provider is told, from the container ffprobe found. */
export function contentTypeOf(container: string): string {
  const names = container.split(',');
  if (names.includes('wav') || names.includes('w64')) return 'audio/wav';
  if (names.includes('mp3')) return 'audio/mpeg';
  if (names.includes('ogg')) return 'audio/ogg';
  if (names.includes('flac')) return 'audio/flac';
  if (names.includes('webm') || names.includes('matroska')) return 'audio/webm';
  if (names.includes('mp4') || names.includes('mov') || names.includes('m4a')) return 'audio/mp4';
  if (names.includes('aac')) return 'audio/aac';
  return 'application/octet-stream';
}

export interface AudioFacts {
  /** ffmpeg's demuxer name, e.g. `wav`, `mov,mp4,m4a,3gp,3g2,mj2`. */
  container: string;
  contentType: string;
  /** Seconds, from decoding (exact to the sample), not from the container's claim. */
  durationS: number;
  /** The decoded audio (16 kHz mono s16le), when asked for with `keepPcm`. */
  pcm?: Buffer;
}

export type ExamineOptions = { maxSeconds?: number; signal?: AbortSignal; keepPcm?: false } | { maxSeconds: number; signal?: AbortSignal; keepPcm: true };

/**
 * Decodes the file at `path`, in one ffmpeg run that names its container too. `maxSeconds` stops
 * decoding there (the sync limit): the answer is then `maxSeconds` plus a little, enough to refuse.
 * Undecodable audio → 400 invalid_audio. `keepPcm` (only with `maxSeconds`: the PCM is then
 * bounded) keeps what was decoded, so that an engine taking PCM need not decode the file again.
 */
export async function examineAudio(path: string, opts: ExamineOptions = {}): Promise<AudioFacts> {
  try {
    let container = '';
    const decode = {
      ...(opts.maxSeconds !== undefined ? { maxSeconds: opts.maxSeconds + 1 } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
      onContainer: (name: string) => {
        container = name;
      },
    };
    // Without keepPcm, ffmpeg counts the decoded PCM itself: it never passes through this process
    // (an hour is 115 MB).
    const pcm = opts.keepPcm ? await collect(decodeToPcm({ path }, decode)) : undefined;
    const bytes = pcm ? pcm.length : await decodedPcmBytes({ path }, decode);
    const durationS = pcmSeconds(bytes);
    if (durationS <= 0) throw new ApiError('invalid_audio', 'The file holds no audio samples.', { param: 'file' });
    return { container, contentType: contentTypeOf(container), durationS, ...(pcm ? { pcm } : {}) };
  } catch (err) {
    if (err instanceof AudioDecodeError) {
      throw new ApiError('invalid_audio', `The file could not be decoded as audio (${err.message}). Send wav, mp3, ogg/opus, flac, m4a/aac or webm.`, {
        param: 'file',
      });
    }
    throw err;
  }
}

async function collect(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const all: Buffer[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return Buffer.concat(all);
}
