// Word error rate: (substitutions + deletions + insertions) / reference words, by the word-level
// edit distance. Used by `npm run eval:stt` and the recogniser's tests.

/** Lowercase words, punctuation removed (apostrophes kept: "don't"). */
export function normalizeWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}'\s]/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

export interface WordErrors {
  substitutions: number;
  deletions: number;
  insertions: number;
  /** Words in the reference. */
  words: number;
}

export function wordErrors(reference: string, hypothesis: string): WordErrors {
  const ref = normalizeWords(reference);
  const hyp = normalizeWords(hypothesis);
  // cost[j] is [edits, subs, dels, ins] to turn ref[0..i) into hyp[0..j).
  type Cell = [number, number, number, number];
  let prev = Array.from({ length: hyp.length + 1 }, (_, j): Cell => [j, 0, 0, j]);
  for (let i = 1; i <= ref.length; i++) {
    const row: Cell[] = [[i, 0, i, 0]];
    for (let j = 1; j <= hyp.length; j++) {
      const diag = prev[j - 1]!;
      const same = ref[i - 1] === hyp[j - 1];
      const options: Cell[] = [
        [diag[0] + (same ? 0 : 1), diag[1] + (same ? 0 : 1), diag[2], diag[3]],
        [prev[j]![0] + 1, prev[j]![1], prev[j]![2] + 1, prev[j]![3]],
        [row[j - 1]![0] + 1, row[j - 1]![1], row[j - 1]![2], row[j - 1]![3] + 1],
      ];
      row.push(options.reduce((best, c) => (c[0] < best[0] ? c : best)));
    }
    prev = row;
  }
  const [, substitutions, deletions, insertions] = prev[hyp.length]!;
  return { substitutions, deletions, insertions, words: ref.length };
}

/** WER over several utterances: total errors over total reference words. */
export function wordErrorRate(pairs: readonly { reference: string; hypothesis: string }[]): number {
  let errors = 0;
  let words = 0;
  for (const { reference, hypothesis } of pairs) {
    const e = wordErrors(reference, hypothesis);
    errors += e.substitutions + e.deletions + e.insertions;
    words += e.words;
  }
  return words === 0 ? 0 : errors / words;
}
