// A client's context biasing the offline recogniser (pure): OpenAI's `prompt` and our key terms name
// words the speech holds ("Dashwood", "amiable", "ill disposed"); pocketsphinx cannot take them into
// its general language model (Debian ships it only in binary, and its converter fails on it: no
// interpolation, no boosted unigrams), so the engine writes each utterance's N best hypotheses
// (`-nbest`) and the one chosen is the best once each distinct word and word pair of the context it
// holds earns a bonus. Words the general model's dictionary lacks cannot appear in any hypothesis,
// and a word none of the N best holds is not found: the bias corrects near misses ("until this
// blows" → "ill disposed"), it does not add words. Measured by `npm run eval:stt` (docs/speech-engines.md).
import { spokenWord, type RawWord } from './pocketsphinx-output.ts';

/** How many hypotheses the engine writes per utterance when biased (300: the LibriVox clips' right words appear within it). */
export const NBEST = 300;
/**
 * The bonus per distinct context word, and per distinct context word pair, a hypothesis holds, in
 * the engine's log-base-1.0001 score: the N best of a clip lie within ~300 of each other, so one
 * matched word outweighs the acoustic and language model's preference among them (200 gave half the
 * gain, 400–3,200 the same, on `npm run eval:stt`).
 */
export const BONUS = 1000;

/** Words too common to say anything about the speech: favoured, they would only add insertions. */
const COMMON = new Set(
  (
    'a an the and or but if of to in on at by for with from as is are was were be been being am do does did have has had ' +
    'i me my we our you your he him his she her it its they them their this that these those there here what which who ' +
    'not no yes so than then too very can will would should could shall may might must just also about into over up out'
  ).split(' '),
);

/** What a context favours: its uncommon words, and its pairs of adjacent words. */
export interface Bias {
  words: ReadonlySet<string>;
  pairs: ReadonlySet<string>;
}

const wordsOf = (text: string): string[] => text.toLowerCase().match(/[a-z]+(?:'[a-z]+)*/g) ?? [];

/** The bias of a client's prompt and key terms; null when they name no uncommon word. */
export function biasOf(context: { prompt?: string | undefined; keyTerms?: readonly string[] | undefined } | undefined): Bias | null {
  const texts = [context?.prompt ?? '', ...(context?.keyTerms ?? [])];
  const words = new Set<string>();
  const pairs = new Set<string>();
  for (const text of texts) {
    const ws = wordsOf(text);
    for (const w of ws) if (!COMMON.has(w)) words.add(w);
    for (let i = 1; i < ws.length; i++) pairs.add(`${ws[i - 1]} ${ws[i]}`);
  }
  return words.size === 0 ? null : { words, pairs };
}

/** The bonus a hypothesis earns: each distinct context word and pair it holds counts once. */
function earned(words: readonly string[], bias: Bias): number {
  const found = new Set<string>();
  for (let i = 0; i < words.length; i++) {
    if (bias.words.has(words[i]!)) found.add(words[i]!);
    if (i > 0 && bias.pairs.has(`${words[i - 1]} ${words[i]}`)) found.add(`${words[i - 1]} ${words[i]}`);
  }
  return found.size * BONUS;
}

/** An N-best file's hypotheses (`<word> … <score>` per line, best first) as spoken words and scores. */
export function nbestHypotheses(nbest: string | null): { words: string[]; score: number }[] {
  const out: { words: string[]; score: number }[] = [];
  for (const line of (nbest ?? '').split('\n')) {
    const tokens = line.trim().split(/\s+/);
    const last = tokens.pop() ?? '';
    if (!/^-?\d+$/.test(last)) continue; // a blank line, or one cut short
    out.push({ words: tokens.map(spokenWord).filter((w): w is string => w !== null), score: Number(last) });
  }
  return out;
}

/** Word sequences with repeats left out (the first kept), from hypotheses or word lists. */
export function distinct(hypotheses: readonly (readonly string[] | { words: readonly string[] })[]): string[][] {
  const seen = new Set<string>();
  const out: string[][] = [];
  for (const h of hypotheses) {
    const words = 'words' in h ? h.words : h;
    const key = words.join(' ');
    if (seen.has(key)) continue;
    seen.add(key);
    out.push([...words]);
  }
  return out;
}

/**
 * The best hypothesis of an N-best file once biased, as spoken words; null when it holds no more of
 * the context than `first` (the engine's first best, kept then: the N-best search orders
 * near-equal hypotheses otherwise than its best path does).
 */
export function rescore(nbest: string, bias: Bias, first: readonly string[]): string[] | null {
  let best: { score: number; bonus: number; words: string[] } | null = null;
  for (const { words, score } of nbestHypotheses(nbest)) {
    const bonus = earned(words, bias);
    if (best === null || score + bonus > best.score) best = { score: score + bonus, bonus, words };
  }
  return best !== null && best.bonus > earned(first, bias) ? best.words : null;
}

/**
 * The chosen hypothesis's words with times, taken from the first-best words they align with (an
 * edit-distance alignment: a kept or replaced word takes the time of the word it replaces; a word
 * the first best lacks takes no time, where it falls). `first` holds spoken words only.
 */
export function retime(first: readonly RawWord[], words: readonly string[]): RawWord[] {
  const n = first.length;
  const m = words.length;
  const cost = Array.from({ length: n + 1 }, (_, i) => Array.from({ length: m + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= n; i++) {
    for (let j = 1; j <= m; j++) {
      const same = spokenWord(first[i - 1]!.token) === words[j - 1] ? 0 : 1;
      cost[i]![j] = Math.min(cost[i - 1]![j]! + 1, cost[i]![j - 1]! + 1, cost[i - 1]![j - 1]! + same);
    }
  }
  const out: RawWord[] = [];
  let i = n;
  let j = m;
  while (j > 0) {
    if (i > 0 && cost[i]![j] === cost[i - 1]![j - 1]! + (spokenWord(first[i - 1]!.token) === words[j - 1] ? 0 : 1)) {
      out.push({ token: words[j - 1]!, start: first[i - 1]!.start, end: first[i - 1]!.end });
      i--;
      j--;
    } else if (i > 0 && cost[i]![j] === cost[i - 1]![j]! + 1) {
      i--; // a first-best word the chosen one drops
    } else {
      const at = i > 0 ? first[i - 1]!.end : (first[0]?.start ?? 0);
      out.push({ token: words[j - 1]!, start: at, end: at });
      j--;
    }
  }
  return out.reverse();
}
