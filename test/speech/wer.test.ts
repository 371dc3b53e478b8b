import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalizeWords, wordErrorRate, wordErrors } from '../../src/speech/wer.ts';

describe('word error rate', () => {
  it('counts substitutions, deletions and insertions by edit distance', () => {
    assert.deepEqual(wordErrors('he was not an ill disposed young man', 'he was not an illness those young man'), {
      substitutions: 2,
      deletions: 0,
      insertions: 0,
      words: 8,
    });
    assert.deepEqual(wordErrors('a b c d', 'a c d e f'), { substitutions: 0, deletions: 1, insertions: 2, words: 4 });
    assert.deepEqual(wordErrors('a b', ''), { substitutions: 0, deletions: 2, insertions: 0, words: 2 });
    assert.deepEqual(wordErrors('', 'x'), { substitutions: 0, deletions: 0, insertions: 1, words: 0 });
  });

  it('ignores case and punctuation, and totals over utterances', () => {
    assert.deepEqual(normalizeWords("And so, my fellow Americans: don't!"), ['and', 'so', 'my', 'fellow', 'americans', "don't"]);
    assert.equal(
      wordErrorRate([
        { reference: 'one two three four', hypothesis: 'One two three FOUR.' },
        { reference: 'five six', hypothesis: 'five seven' },
      ]),
      1 / 6,
    );
  });
});
