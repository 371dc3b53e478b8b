// Checks shared by the speech-to-text providers on what their upstreams answer. As validate.ts:
// upstream JSON is untrusted, fields are copied into fresh objects after these checks.
import { protocolError } from './validate.ts';
import type { AudioInput, TranscriptSegment, TranscriptWord, WhisperDecoderFields } from './types.ts';

/** No recording is a week long; a larger time is an upstream bug. */
const MAX_SECONDS = 7 * 24 * 3600;

/** Seconds: a finite number in 0..a week, else null. */
export function secondsOf(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= MAX_SECONDS ? v : null;
}

/**
 * A time span in seconds. Bad numbers are a protocol error; an end a little before its start
 * (rounding in the upstream) becomes the start.
 */
export function spanOf(routeId: string, start: unknown, end: unknown, what: string): { start: number; end: number } {
  const s = secondsOf(start);
  const e = secondsOf(end);
  if (s === null || e === null) throw protocolError(routeId, `${what} has no valid start and end`);
  return { start: s, end: Math.max(s, e) };
}

export function textOf(routeId: string, v: unknown, what: string): string {
  if (typeof v !== 'string') throw protocolError(routeId, `${what} is not text`);
  return v;
}

/**
 * A speaker label as the provider gives it (Deepgram's integers, OpenAI's letters or names,
 * Sarvam's SPEAKER_00): a string of 1..64 characters or an integer in 0..999999; null otherwise.
 */
export function speakerOf(v: unknown): string | number | null {
  if (typeof v === 'string' && v.length > 0 && v.length <= 64) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v < 1_000_000) return v;
  return null;
}

/** Whisper's token ids per segment stay well under this (its context is 448 tokens). */
const MAX_SEGMENT_TOKENS = 1024;

/**
 * A Whisper segment's decoder fields, each taken only when well-formed (token ids: non-negative
 * integers; avg_logprob: finite, at most 0; no_speech_prob: 0..1); undefined when none is. A
 * malformed one is left out (rendered as an engine without it), not a failure of the transcript.
 */
export function whisperDecoderOf(s: Record<string, unknown>): WhisperDecoderFields | undefined {
  const out: WhisperDecoderFields = {};
  const { tokens, avg_logprob: logprob, no_speech_prob: noSpeech } = s;
  if (Array.isArray(tokens) && tokens.length <= MAX_SEGMENT_TOKENS && tokens.every((t) => Number.isSafeInteger(t) && (t as number) >= 0))
    out.tokens = tokens as number[];
  if (typeof logprob === 'number' && Number.isFinite(logprob) && logprob <= 0) out.avg_logprob = logprob;
  if (typeof noSpeech === 'number' && noSpeech >= 0 && noSpeech <= 1) out.no_speech_prob = noSpeech;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * Gives each word to the segment it starts in (the last segment starting at or before it), for
 * upstreams that list words apart from segments (Whisper's verbose_json). Words before the first
 * segment go to it. With no segments, one segment holds them all.
 */
export function attachWords(text: string, segments: TranscriptSegment[], words: TranscriptWord[]): TranscriptSegment[] {
  if (words.length === 0) return segments;
  if (segments.length === 0) {
    return [{ start: words[0]!.start, end: words.at(-1)!.end, text: text.trim(), words }];
  }
  const out = segments.map((s) => ({ ...s, words: [] as TranscriptWord[] }));
  let at = 0;
  for (const w of words) {
    while (at + 1 < out.length && out[at + 1]!.start <= w.start) at++;
    out[at]!.words.push(w);
  }
  return out;
}

/** The primary language subtag of a BCP-47 tag, lower-cased (`hi-IN` → `hi`). */
export function primaryLanguage(tag: string): string {
  return (tag.split('-')[0] ?? '').toLowerCase();
}

/**
 * The transcript's language as a BCP-47 tag from the upstream's ISO 639 code: the request's tag
 * when it names the same language (the region the client gave is kept: `hi` + asked `hi-IN` →
 * `hi-IN`), else the code itself.
 */
export function languageTag(code: string | null, requested: string | undefined): string | null {
  if (code === null) return null;
  return requested !== undefined && primaryLanguage(requested) === code.toLowerCase() ? requested : code;
}

const EXTENSIONS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/wave': 'wav',
  'audio/x-wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/mp3': 'mp3',
  'audio/ogg': 'ogg',
  'audio/opus': 'ogg',
  'audio/flac': 'flac',
  'audio/x-flac': 'flac',
  'audio/mp4': 'm4a',
  'audio/m4a': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/webm': 'webm',
  'video/webm': 'webm',
  'video/mp4': 'mp4',
};

/**
 * The name audio is uploaded under: `audio.<ext>`, the extension from the probed content type
 * (upstreams such as OpenAI read the format from it), else the client's extension when it is
 * plain letters and digits. The client's file name itself never goes upstream.
 */
export function uploadName(audio: AudioInput): string {
  const type = audio.contentType.split(';')[0]!.trim().toLowerCase();
  const given = /\.([A-Za-z0-9]{1,5})$/.exec(audio.filename)?.[1]?.toLowerCase();
  return `audio.${EXTENSIONS[type] ?? given ?? 'bin'}`;
}
