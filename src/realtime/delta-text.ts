// One item's text as OpenAI's appendable `…delta` frames, from what an upstream heard of it.
// OpenAI's deltas append: passed on as they are. Sarvam's partials and Deepgram's interim results
// replace each other (the last word is often revised: "he was no" → "he was not an"): a word is
// sent once it held still across two partials in a row, or once the upstream settled it, so what
// was sent is rarely taken back. The final text then sends what is left, when what was sent is its
// beginning; when the upstream revised a word already sent (rare), nothing more is sent and
// `completed.transcript` is the text (as with OpenAI, the transcript is the truth, the deltas a preview).
import type { Heard } from '../providers/types.ts';

const wordsOf = (text: string): string[] => text.split(/\s+/).filter((w) => w !== '');

export class DeltaText {
  private sent: string[] = [];
  /** Raw deltas were passed on (OpenAI's): they are the text; the final adds nothing. */
  private appended = false;
  private previous: string[] = [];

  /** The appendable piece `heard` adds ('' when none). */
  take(heard: Heard): string {
    if (heard.kind === 'delta') {
      this.appended = true;
      return heard.text;
    }
    const words = wordsOf(heard.text);
    let stable = words.length;
    if (!heard.settled) {
      stable = 0;
      while (stable < words.length && stable < this.previous.length && words[stable] === this.previous[stable]) stable++;
    }
    this.previous = words;
    return this.extend(words.slice(0, stable));
  }

  /** What is left of the final text to send ('' when nothing, or when a word already sent was revised). */
  finish(text: string): string {
    if (this.appended) return '';
    if (this.sent.length === 0) return text.trim();
    return this.extend(wordsOf(text));
  }

  private extend(words: string[]): string {
    if (words.length <= this.sent.length || this.sent.some((w, i) => words[i] !== w)) return '';
    const piece = words.slice(this.sent.length).join(' ');
    const lead = this.sent.length > 0 ? ' ' : '';
    this.sent = words;
    return lead + piece;
  }
}
