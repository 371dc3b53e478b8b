// Noisy variants of training examples. Pack examples are tidy paraphrases written by whoever built
// the pack; real turns are fragments ("pincode delivery"), misspelt ("mattres prize"), typed the
// way people text ("hw mny days", "pls"). `noisy` rewrites a text the way such traffic differs from
// it: words dropped, the text cut to a short fragment, and per word a typo (a dropped, doubled or
// swapped letter, a neighbouring key) or its inner vowels dropped. Everything is driven by a seeded
// generator, so a pack always augments to the same examples and trains to the same weights.
import { mulberry32 } from './classifier.ts';

export interface AugmentOptions {
  /** Noisy variants per example (0: none). */
  copies: number;
  /** Seed of the generator (default 1). */
  seed?: number;
  /**
   * What a variant changes: `words` drops words and cuts fragments, then misspells (`variant`);
   * `spelling` keeps every word and misspells a third of them (`misspelt`). Default `words`.
   */
  style?: 'words' | 'spelling';
}

/** Neighbouring keys on a QWERTY keyboard (the usual substitution typo). */
const NEAR: Record<string, string> = {
  q: 'wa',
  w: 'qes',
  e: 'wrd',
  r: 'etf',
  t: 'ryg',
  y: 'tuh',
  u: 'yij',
  i: 'uok',
  o: 'ipl',
  p: 'ol',
  a: 'qsz',
  s: 'adwx',
  d: 'sfe',
  f: 'dgr',
  g: 'fht',
  h: 'gjy',
  j: 'hku',
  k: 'jli',
  l: 'ko',
  z: 'xa',
  x: 'zcs',
  c: 'xvd',
  v: 'cbf',
  b: 'vng',
  n: 'bmh',
  m: 'nj',
};
const VOWEL = /[aeiou]/;
const pick = <T>(xs: readonly T[], rand: () => number): T => xs[Math.floor(rand() * xs.length)]!;
const wordsOf = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}']+/u)
    .filter(Boolean);

/** Each word misspelt with a typo when a draw falls below `typoBelow`, else shortened below `shortBelow`; joined. */
function misspellEach(words: string[], rand: () => number, typoBelow: number, shortBelow: number): string {
  return words
    .map((w) => {
      const r = rand();
      return r < typoBelow ? typo(w, rand) : r < shortBelow ? dropVowels(w) : w;
    })
    .join(' ');
}

/** One typo in a word of 3+ letters: a letter dropped, doubled, swapped with the next, or a neighbouring key. */
export function typo(word: string, rand: () => number): string {
  if (word.length < 3 || !/^[a-z]+$/.test(word)) return word;
  const i = 1 + Math.floor(rand() * (word.length - 1));
  const c = word[i]!;
  switch (Math.floor(rand() * 4)) {
    case 0:
      return word.slice(0, i) + word.slice(i + 1);
    case 1:
      return word.slice(0, i) + c + word.slice(i);
    case 2:
      return i + 1 < word.length ? word.slice(0, i) + word[i + 1] + c + word.slice(i + 2) : word.slice(0, i - 1) + c + word[i - 1];
    default:
      return word.slice(0, i) + pick([...(NEAR[c] ?? c)], rand) + word.slice(i + 1);
  }
}

/** The inner vowels of a word of 3+ letters dropped, as people text: "please" → "pls", "many" → "mny". */
export function dropVowels(word: string): string {
  if (word.length < 3 || !/^[a-z]+$/.test(word)) return word;
  const inner = word.slice(1, -1).replace(/[aeiou]/g, '');
  const last = word[word.length - 1]!;
  // A final vowel goes too when something else is left ("please" → "pls", "more" → "mr").
  const tail = VOWEL.test(last) && inner.length > 0 ? '' : last;
  return word[0] + inner + tail;
}

/**
 * A noisy variant of `text`: lower-cased, then either cut to a fragment of one to three
 * consecutive words (a third of the time) or with each word dropped with probability 0.25
 * (at least one kept), then each word misspelt (typo, 0.15) or shortened (inner vowels dropped, 0.1).
 */
export function noisy(text: string, rand: () => number): string {
  let words = wordsOf(text);
  if (words.length > 1) {
    if (rand() < 1 / 3) {
      const len = Math.min(words.length, 1 + Math.floor(rand() * 3));
      const start = Math.floor(rand() * (words.length - len + 1));
      words = words.slice(start, start + len);
    } else {
      const kept = words.filter(() => rand() >= 0.25);
      words = kept.length > 0 ? kept : [pick(words, rand)];
    }
  }
  return misspellEach(words, rand, 0.15, 0.25);
}

/** Words that frame a question rather than say what it is about (English and romanised Hindi). */
const FUNCTION_WORDS = new Set(
  (
    'i me my mine we our you your u ur the a an is are am was were be been do does did can could will would shall should ' +
    'please pls to of for on in at it its this that these those there here have has had get got give tell know want need ' +
    'like just also so and or but if any some about with from by as hi hello sir madam ok okay ' +
    'mujhe mera meri mere hai hain ho kya ka ki ke ko se me mein aap ap tum hum ye yeh wo woh bhi na nahi to toh kar karo karna chahiye batao bataiye'
  ).split(' '),
);

/**
 * A training variant of `text` that keeps what it is about: a third of the time only its content
 * words (at most three consecutive ones: "can you deliver to my pincode" → "deliver pincode"),
 * otherwise each function word dropped with probability 0.4 and each content word with 0.1; then
 * each word misspelt (typo, 0.1) or shortened (inner vowels dropped, 0.1). Unlike `noisy`, it
 * does not cut a text down to its framing words, which would teach an intent "what is the".
 */
export function variant(text: string, rand: () => number): string {
  const words = wordsOf(text);
  const content = words.filter((w) => !FUNCTION_WORDS.has(w));
  let kept: string[];
  if (content.length > 0 && rand() < 1 / 3) {
    const len = Math.min(content.length, 1 + Math.floor(rand() * 3));
    const start = Math.floor(rand() * (content.length - len + 1));
    kept = content.slice(start, start + len);
  } else {
    kept = words.filter((w) => rand() >= (FUNCTION_WORDS.has(w) ? 0.4 : 0.1));
    if (kept.length === 0) kept = content.length > 0 ? content : words;
  }
  return misspellEach(kept, rand, 0.1, 0.2);
}

/** Every word kept, a third of them misspelt (a typo or its inner vowels dropped, as often). */
export function misspelt(text: string, rand: () => number): string {
  return misspellEach(wordsOf(text), rand, 1 / 6, 1 / 3);
}

/**
 * `copies` training variants (`variant`) of each text (those equal to their original or to another
 * variant of it are skipped), in the order of the texts; the same texts and seed give the same variants.
 */
export function augment(texts: readonly string[], opts: AugmentOptions): string[] {
  const rand = mulberry32(opts.seed ?? 1);
  const out: string[] = [];
  for (const text of texts) {
    const seen = new Set([text.toLowerCase().trim()]);
    for (let k = 0; k < opts.copies; k++) {
      const v = opts.style === 'spelling' ? misspelt(text, rand) : variant(text, rand);
      if (v && !seen.has(v)) {
        seen.add(v);
        out.push(v);
      }
    }
  }
  return out;
}
