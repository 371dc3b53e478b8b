// A streamed reply as speech, sentence by sentence: the LLM's text deltas are cut into sentences as
// they complete (`sentences`), and each sentence is synthesized as soon as it is cut, while the ones
// before it play (`spokenLines`): the callee hears the first sentence after the LLM wrote it and the
// tts spoke it, not after the whole reply. Cancelling (barge-in, hang-up) is the caller's signal:
// it ends the text stream and every synthesis still running.
import type { SpeechClip } from '../speech/clip.ts';

/** One sentence of a reply with its audio (8 kHz PCM16, with its μ-law: src/speech/clip.ts). */
export interface SpokenLine {
  text: string;
  audio: SpeechClip;
}

/**
 * A sentence shorter than this is not cut yet: "Dr." or "Hi." would be a clip of their own (a
 * synthesis request and a pause each); they join the next sentence.
 */
const MIN_SENTENCE_CHARS = 12;
/** A sentence with no end this long is cut at its last space (a run-on reply still starts early). */
const MAX_SENTENCE_CHARS = 300;
/** A sentence end: . ! ? or the Devanagari danda (।), with closing quotes or brackets, then a space; or a newline. */
const SENTENCE_END = /[.!?।]+["'”’)\]]*(?=\s)|\n/g;
/** Abbreviations and initials whose full stop ends no sentence ("Dr. Rao", "Rs. 500", "A. K. Sharma"). */
const ABBREVIATION = /(?:^|[\s(])(?:dr|mr|mrs|ms|prof|st|sr|jr|rs|no|vs|etc|approx|e\.g|i\.e|[a-z])\.$/i;

/** Where the first sentence of `text` ends (its length with the end), or -1 when none has ended yet. */
function sentenceEnd(text: string): number {
  for (const m of text.matchAll(SENTENCE_END)) {
    const end = m.index + m[0].length;
    if (m[0] !== '\n' && ABBREVIATION.test(text.slice(0, end).trimEnd())) continue;
    if (text.slice(0, end).trim().length >= MIN_SENTENCE_CHARS) return end;
  }
  if (text.length < MAX_SENTENCE_CHARS) return -1;
  const space = text.lastIndexOf(' ', MAX_SENTENCE_CHARS);
  return space > 0 ? space + 1 : MAX_SENTENCE_CHARS;
}

/** The sentences of streamed text, each as soon as it ends (the rest when the stream ends). */
export async function* sentences(deltas: AsyncIterable<string>): AsyncGenerator<string> {
  let text = '';
  for await (const delta of deltas) {
    text += delta;
    for (let end = sentenceEnd(text); end > 0; end = sentenceEnd(text)) {
      const sentence = text.slice(0, end).trim();
      text = text.slice(end);
      if (sentence) yield sentence;
    }
  }
  const rest = text.trim();
  if (rest) yield rest;
}

/**
 * The sentences with their audio, in order. Each sentence's synthesis starts when the sentence is
 * cut, without waiting for the consumer: while the consumer plays one line, the next ones are
 * being synthesized. A failure of the text stream or of a synthesis ends the lines there (thrown
 * to the consumer after the lines before it); `signal` aborts the syntheses still running.
 */
export function spokenLines(
  texts: AsyncIterable<string>,
  synthesize: (text: string, signal: AbortSignal) => Promise<SpeechClip>,
  signal: AbortSignal,
): AsyncIterable<SpokenLine> {
  const ready: Promise<SpokenLine>[] = [];
  let finished = false;
  let failure: unknown = null;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  void (async () => {
    try {
      for await (const text of texts) {
        if (signal.aborted) break;
        const line = synthesize(text, signal).then((audio) => ({ text, audio }));
        line.catch(() => undefined); // thrown to the consumer when it reaches this line
        ready.push(line);
        notify();
      }
    } catch (err) {
      failure = err;
    } finally {
      finished = true;
      notify();
    }
  })();
  return (async function* () {
    for (;;) {
      const next = ready.shift();
      if (next) {
        yield await next;
        continue;
      }
      if (finished) {
        if (failure !== null) throw failure;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  })();
}
