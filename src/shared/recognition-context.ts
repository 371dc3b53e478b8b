// What a recogniser is told about the speech before it hears it: the context OpenAI's `prompt`
// carries (the text the speech follows: a call's last question, a clip's rare words), a list of key
// terms (the gateway's extension: words and phrases to favour), and, on a call, the shape of the
// answer the agent's question asked for. Every edge that takes it (the transcription forms, the
// realtime socket's session update, a call's listener) checks it with the same limits, and every
// provider receives it on its request (`TranscribeRequest.context`, `RealtimeOpenRequest.context`)
// and sends upstream what its API takes (docs/api/audio.md says which).
import { brokenRule } from './strings.ts';

/** The answer a call's question expects: a yes or a no, an amount, digits (a phone or account number), a date. */
export type ExpectedAnswer = 'yes_no' | 'amount' | 'digits' | 'date';

export interface RecognitionContext {
  /** Text the speech follows or resembles (OpenAI's `prompt`): the question just asked, a clip's rare words. */
  prompt?: string;
  /** Words and phrases the speech is likely to hold, to favour (in the order given; at most KEY_TERMS_MAX). */
  keyTerms?: string[];
  /** The shape of answer expected (a call's ASK); absent when any speech is as likely. */
  expect?: ExpectedAnswer;
  /**
   * A call's conversation: the key its intent pack's language models were prepared under for the
   * offline engine (src/speech/language-models.ts; src/voice/expectations.ts's speechDomain). Only
   * stt-local reads it; no client sets it.
   */
  domain?: string;
}

/** The most key terms a request may give (Deepgram's own limit for `keyterm`). */
export const KEY_TERMS_MAX = 100;
/** The longest key term, in characters: a word or a short phrase, not a sentence. */
export const KEY_TERM_MAX_CHARS = 50;

/**
 * The key terms as given (each trimmed; repeats dropped, the first kept), or the problem with them
 * in words a client can act on: not a list of strings, too many, one empty or too long or holding
 * control characters. `index` names the offending term when there is one.
 */
export function readKeyTerms(values: readonly unknown[]): { terms: string[] } | { problem: string; index?: number } {
  if (values.length > KEY_TERMS_MAX) return { problem: `at most ${KEY_TERMS_MAX} key terms are taken, not ${values.length}` };
  const terms: string[] = [];
  for (const [index, value] of values.entries()) {
    if (typeof value !== 'string') return { problem: 'each key term is a string', index };
    const term = value.trim();
    if (term === '') return { problem: 'a key term is not empty', index };
    if ([...term].length > KEY_TERM_MAX_CHARS) return { problem: `a key term is at most ${KEY_TERM_MAX_CHARS} characters`, index };
    // A key string's rule: a term goes into query strings, form fields and prompts.
    const rule = brokenRule(term, 'key');
    if (rule) return { problem: `a key term ${rule}`, index };
    if (!terms.includes(term)) terms.push(term);
  }
  return { terms };
}

/** The context with its empty parts left out; undefined when nothing is left. */
export function contextOf(parts: {
  prompt?: string | undefined;
  keyTerms?: readonly string[] | undefined;
  expect?: ExpectedAnswer | null | undefined;
  domain?: string | null | undefined;
}): RecognitionContext | undefined {
  const out: RecognitionContext = {};
  if (parts.domain) out.domain = parts.domain;
  if (parts.prompt) out.prompt = parts.prompt;
  if (parts.keyTerms && parts.keyTerms.length > 0) out.keyTerms = [...parts.keyTerms];
  if (parts.expect) out.expect = parts.expect;
  return Object.keys(out).length > 0 ? out : undefined;
}
