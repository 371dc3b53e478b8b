// Reading pocketsphinx's output (pure): a `-hypseg` line into words with their times, markers and
// fillers dropped, pronunciation variants folded, and an utterance's words into transcript segments
// split where the speaker pauses. The engine (pocketsphinx-engine.ts) reads each decoded line here.
import type { TranscriptSegment, TranscriptWord } from './transcript.ts';

/** pocketsphinx's frame: 10 ms, 160 samples at 16 kHz. */
export const FRAME_SECONDS = 0.01;

export interface RawWord {
  token: string;
  /** Seconds from the start of the audio. */
  start: number;
  end: number;
}

/**
 * One `-hypseg` line: `<id> S <n> T <n> A <n> L <n>` then `<start frame> <acoustic> <lm> <word>`
 * per word, then the last end frame; frames count from the utterance's start, `offsetSeconds`.
 */
export function parseHypseg(line: string, offsetSeconds: number): { id: string; words: RawWord[] } | null {
  const tokens = line.trim().split(/\s+/);
  if (tokens.length < 10 || tokens[1] !== 'S' || tokens[3] !== 'T' || tokens[5] !== 'A' || tokens[7] !== 'L') return null;
  const entries = tokens.slice(9);
  const words: RawWord[] = [];
  for (let i = 0; i + 4 < entries.length; i += 4) {
    const start = Number(entries[i]);
    const next = Number(entries[i + 4]);
    if (!Number.isInteger(start) || !Number.isInteger(next)) return null;
    words.push({ token: entries[i + 3]!, start: round(offsetSeconds + start * FRAME_SECONDS), end: round(offsetSeconds + next * FRAME_SECONDS) });
  }
  return { id: tokens[0]!, words };
}

/** The spoken word of a token, or null for markers: `<s>`, `</s>`, `<sil>`, `[NOISE]`, `++…++`. */
export function spokenWord(token: string): string | null {
  if (/^<.*>$/.test(token) || /^\[.*\]$/.test(token) || /^\+\+.*\+\+$/.test(token) || token === '(NULL)') return null;
  return token.replace(/\(\d+\)$/, ''); // `and(2)`: the second pronunciation of "and"
}

const round = (x: number): number => Math.round(x * 1000) / 1000;

/**
 * One utterance's words → its segments: markers and fillers dropped, pronunciation variants
 * folded, split where the speaker pauses at least `pauseSeconds` (a `<sil>`, a filler or a gap).
 */
export function utteranceSegments(words: readonly RawWord[], pauseSeconds = 0.3): TranscriptSegment[] {
  const segments: TranscriptSegment[] = [];
  let current: TranscriptWord[] = [];
  let lastEnd = -Infinity;
  for (const raw of words) {
    const word = spokenWord(raw.token);
    if (word === null) continue;
    if (current.length > 0 && raw.start - lastEnd >= pauseSeconds) {
      segments.push(toSegment(current));
      current = [];
    }
    current.push({ word, start: raw.start, end: raw.end });
    lastEnd = raw.end;
  }
  if (current.length > 0) segments.push(toSegment(current));
  return segments;
}

function toSegment(words: TranscriptWord[]): TranscriptSegment {
  return { start: words[0]!.start, end: words.at(-1)!.end, text: words.map((w) => w.word).join(' '), words };
}
