// The transcript every speech engine and provider adapter produces, before it is rendered in a
// response format (formats.ts). Times are seconds from the start of the audio.

export interface TranscriptWord {
  word: string;
  start: number;
  end: number;
}

export interface TranscriptSegment {
  start: number;
  end: number;
  text: string;
  /** Present when the engine gives word times. */
  words?: TranscriptWord[];
  /** Mean natural log of the words' posterior probabilities, when the engine gives them (a Whisper upstream's own). */
  avg_logprob?: number;
  /** A Whisper upstream's token ids and no-speech probability for the segment, when it gave them. */
  tokens?: number[];
  no_speech_prob?: number;
  /** Diarized transcripts only: `SPEAKER_00`, `SPEAKER_01`, … */
  speaker?: string;
}

export interface Transcript {
  text: string;
  /** ISO-639-1 (`en`, `hi`), or BCP-47 where the engine says more (`hi-IN`). */
  language: string;
  /** Seconds of audio. */
  duration: number;
  segments: TranscriptSegment[];
}

/** The words of all segments, in order. */
export function transcriptWords(transcript: Transcript): TranscriptWord[] {
  return transcript.segments.flatMap((s) => s.words ?? []);
}

/** Joins segment texts the way Whisper's `text` reads: single spaces, trimmed. */
export function joinSegmentTexts(segments: readonly TranscriptSegment[]): string {
  return segments
    .map((s) => s.text.trim())
    .filter(Boolean)
    .join(' ');
}
