// The deterministic lexical matcher, the cascade's first and cheapest stage. Over the canonical
// tokens of a turn (normalized, Devanagari romanized, Hinglish spellings folded) it scores each
// intent by:
//   - an exact match of a normalized example (certain),
//   - the pack's regular expressions (+PATTERN_WEIGHT each),
//   - weighted keywords and key phrases, authored in the pack, plus "pure" word uni- and bigrams
//     derived from the examples at load (seen at least `minCount` times, ≥ 90% in one intent),
//   - fuzzy matches of misspelled keywords (one edit, for words of five letters or more).
// Out-of-scope vocabulary is matched the same way.
import { canonical, normalize, withinOneEdit } from './normalize.ts';

export const PATTERN_WEIGHT = 3;

const STOP = new Set(
  'a an the i me my we you your is are was were be been am to of in on at for and or it this that with from by as do does did have has had can could will would should please hai ka ki ke ko se me mein main mera meri mere tha thi the ho raha rahi rahe kya nahi na aur ya to bhi hi par ne ye yeh vo voh wo ek'
    .split(' ')
    .map(canonical),
);

const fuzzyKey = (word: string, length: number) => `${word[0]}${length}`;

export interface MatchScore {
  intent: string;
  score: number;
}

export interface MatchResult {
  /** Best first; only intents with a positive score. */
  scores: MatchScore[];
  /** An exact (normalized) example matched: the top intent is certain. */
  exact: boolean;
  /** Out-of-scope words found. */
  oosHits: number;
}

interface Entry {
  intent: string;
  weight: number;
}

export interface MatcherSource {
  intents: { id: string; examples: string[]; patterns: string[]; keywords: Record<string, number> }[];
  outOfScope: string[];
  derive?: { minCount: number; purity: number; weight: number } | false;
}

export class LexicalMatcher {
  private readonly exact = new Map<string, string>();
  /** "tok" or "tok1 tok2" → the intents it speaks for. */
  private readonly phrases = new Map<string, Entry[]>();
  /** Longer phrases (3+ tokens), checked by substring. */
  private readonly longPhrases: { text: string; entries: Entry[] }[] = [];
  private readonly patterns: { intent: string; re: RegExp }[] = [];
  private readonly oos = new Set<string>();
  private readonly oosPhrases: string[] = [];
  /**
   * Keyword tokens of 5+ letters by first letter and length, for fuzzy matching: a turn's word
   * is compared only with keywords it could be one edit from (big packs derive thousands).
   */
  private readonly fuzzy = new Map<string, string[]>();

  constructor(src: MatcherSource) {
    const derive = src.derive === undefined ? { minCount: 3, purity: 0.9, weight: 1 } : src.derive;
    const counts = new Map<string, Map<string, number>>();
    for (const intent of src.intents) {
      for (const ex of intent.examples) {
        const norm = normalize(ex);
        if (norm.text) this.exact.set(norm.text, this.exact.has(norm.text) && this.exact.get(norm.text) !== intent.id ? '' : intent.id);
        if (!derive) continue;
        const grams = new Set<string>();
        norm.tokens.forEach((t, i) => {
          if (!STOP.has(t) && t.length > 1 && !/^\d+$/.test(t)) grams.add(t);
          const n = norm.tokens[i + 1];
          if (n !== undefined && !(STOP.has(t) && STOP.has(n))) grams.add(`${t} ${n}`);
        });
        for (const g of grams) {
          let m = counts.get(g);
          if (!m) counts.set(g, (m = new Map()));
          m.set(intent.id, (m.get(intent.id) ?? 0) + 1);
        }
      }
      for (const [kw, weight] of Object.entries(intent.keywords)) this.addPhrase(normalize(kw).text, { intent: intent.id, weight });
      for (const p of intent.patterns) this.patterns.push({ intent: intent.id, re: new RegExp(p, 'u') });
    }
    if (derive) {
      for (const [gram, byIntent] of counts) {
        let total = 0;
        let best: [string, number] = ['', 0];
        for (const [id, n] of byIntent) {
          total += n;
          if (n > best[1]) best = [id, n];
        }
        if (best[1] >= derive.minCount && best[1] / total >= derive.purity) this.addPhrase(gram, { intent: best[0], weight: derive.weight });
      }
    }
    for (const [k, v] of this.exact) if (v === '') this.exact.delete(k);
    for (const w of src.outOfScope) {
      const t = normalize(w).text;
      if (!t) continue;
      if (t.includes(' ')) this.oosPhrases.push(t);
      else this.oos.add(t);
    }
  }

  private addPhrase(text: string, entry: Entry): void {
    if (!text) return;
    const n = text.split(' ').length;
    if (n >= 3) {
      const found = this.longPhrases.find((p) => p.text === text);
      if (found) found.entries.push(entry);
      else this.longPhrases.push({ text, entries: [entry] });
      return;
    }
    const list = this.phrases.get(text);
    if (list) {
      const same = list.find((e) => e.intent === entry.intent);
      if (same) same.weight = Math.max(same.weight, entry.weight);
      else list.push(entry);
    } else this.phrases.set(text, [entry]);
    if (n === 1 && text.length >= 5) {
      const key = fuzzyKey(text, text.length);
      const bucket = this.fuzzy.get(key) ?? [];
      if (!bucket.includes(text)) bucket.push(text);
      this.fuzzy.set(key, bucket);
    }
  }

  private fuzzyMatch(token: string): string | undefined {
    for (const len of [token.length, token.length - 1, token.length + 1]) {
      for (const cand of this.fuzzy.get(fuzzyKey(token, len)) ?? []) if (withinOneEdit(cand, token)) return cand;
    }
    return undefined;
  }

  match(tokens: string[], text = tokens.join(' ')): MatchResult {
    const scores = new Map<string, number>();
    const add = (entries: Entry[] | undefined, factor = 1) => {
      if (!entries) return;
      for (const e of entries) scores.set(e.intent, (scores.get(e.intent) ?? 0) + e.weight * factor);
    };
    const exact = this.exact.get(text);
    let oosHits = 0;
    for (let i = 0; i < tokens.length; i++) {
      const t = tokens[i]!;
      const direct = this.phrases.get(t);
      if (direct) add(direct);
      else if (t.length >= 5) {
        // One edit away from a keyword: a misspelling ("dispence", "netwrok").
        const cand = this.fuzzyMatch(t);
        if (cand) add(this.phrases.get(cand), 0.8);
      }
      if (i + 1 < tokens.length) add(this.phrases.get(`${t} ${tokens[i + 1]}`));
      if (this.oos.has(t)) oosHits++;
    }
    if (this.longPhrases.length > 0 || this.oosPhrases.length > 0) {
      const padded = ` ${text} `;
      for (const p of this.longPhrases) if (padded.includes(` ${p.text} `)) add(p.entries);
      for (const p of this.oosPhrases) if (padded.includes(` ${p} `)) oosHits++;
    }
    for (const p of this.patterns) if (p.re.test(text)) scores.set(p.intent, (scores.get(p.intent) ?? 0) + PATTERN_WEIGHT);
    const list = [...scores]
      .filter(([, s]) => s > 0)
      .map(([intent, score]) => ({ intent, score }))
      .sort((a, b) => b.score - a.score);
    if (exact) {
      const rest = list.filter((s) => s.intent !== exact);
      const top = Math.max(list[0]?.score ?? 0, 1) + 10;
      return { scores: [{ intent: exact, score: top }, ...rest], exact: true, oosHits };
    }
    return { scores: list, exact: false, oosHits };
  }
}
