// The client's prompt and key terms as the offline recogniser's bias (src/speech/nbest.ts): which
// words count, which of an utterance's N best wins, and the winner's word times.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BONUS, biasOf, rescore, retime } from '../../src/speech/nbest.ts';

const NBEST = [
  'he was not until exposed young man -32790',
  'he was not an illness those young man -32900',
  'he was not an ill disposed young man -33100',
  '',
].join('\n');

describe('the recogniser biased by a prompt', () => {
  it('favours the uncommon words and word pairs of the prompt and key terms, not the common ones', () => {
    const bias = biasOf({ prompt: 'He was ill disposed.', keyTerms: ['Dashwood'] })!;
    assert.deepEqual([...bias.words].sort(), ['dashwood', 'disposed', 'ill']);
    assert.ok(bias.pairs.has('ill disposed'));
    assert.equal(biasOf({ prompt: 'and the of' }), null, 'nothing to favour');
    assert.equal(biasOf(undefined), null);
  });

  it('picks the hypothesis that holds the context once it earns its bonus, and keeps the first best otherwise', () => {
    const first = 'he was not until exposed young man'.split(' ');
    assert.deepEqual(rescore(NBEST, biasOf({ prompt: 'ill disposed' })!, first), 'he was not an ill disposed young man'.split(' '));
    assert.equal(rescore(NBEST, biasOf({ prompt: 'amiable' })!, first), null, 'no hypothesis holds more of it');
    // The bonus is per distinct word: a hypothesis repeating a word gains nothing more by it.
    const repeated = ['amiable amiable amiable -100000', 'amiable -99000', ''].join('\n');
    assert.deepEqual(rescore(repeated, biasOf({ prompt: 'amiable' })!, []), ['amiable']);
    assert.ok(BONUS > 300, 'outweighs the spread of the N best');
  });

  it("times the chosen words from the first best's: replaced words take its times, added ones none", () => {
    const first = [
      { token: 'not', start: 0.5, end: 0.7 },
      { token: 'until', start: 0.7, end: 1.0 },
      { token: 'exposed', start: 1.0, end: 1.5 },
      { token: 'man', start: 1.5, end: 1.8 },
    ];
    assert.deepEqual(retime(first, ['not', 'an', 'ill', 'disposed', 'man']), [
      { token: 'not', start: 0.5, end: 0.7 },
      { token: 'an', start: 0.7, end: 0.7 },
      { token: 'ill', start: 0.7, end: 1.0 },
      { token: 'disposed', start: 1.0, end: 1.5 },
      { token: 'man', start: 1.5, end: 1.8 },
    ]);
    assert.deepEqual(retime(first, ['not', 'man']), [first[0], first[3]]);
  });
});
