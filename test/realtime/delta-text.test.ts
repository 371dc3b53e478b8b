// Appendable deltas from what an upstream heard: OpenAI's deltas as they are; partial hypotheses
// (which replace each other) word by word once a word held still across two of them or was settled.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeltaText } from '../../src/realtime/delta-text.ts';

const partial = (text: string, settled = false) => ({ kind: 'partial' as const, text, settled });

describe('DeltaText', () => {
  it('sends the words that held still across two partials, never a cut word, then the rest of the final', () => {
    const t = new DeltaText();
    const out = ['h', 'he wa', 'he was n', 'he was not a', 'he was not an ill'].map((p) => t.take(partial(p)));
    assert.deepEqual(out, ['', '', 'he', ' was', ' not']);
    assert.equal(t.finish('he was not an ill disposed young man'), ' an ill disposed young man');
  });

  it('settled words go out at once; later partials extend them', () => {
    const t = new DeltaText();
    assert.equal(t.take(partial('he was not an', true)), 'he was not an');
    assert.equal(t.take(partial('he was not an il')), '');
    assert.equal(t.take(partial('he was not an ill dis')), ''); // 'il' became 'ill': not still yet
    assert.equal(t.take(partial('he was not an ill disposed yo')), ' ill');
    assert.equal(t.finish('he was not an ill disposed young'), ' disposed young');
  });

  it('a final that revises a word already sent adds nothing (completed holds the text)', () => {
    const t = new DeltaText();
    t.take(partial('the cat sat', true));
    assert.equal(t.take(partial('a cat sat on')), '');
    assert.equal(t.finish('A cat sat on the mat.'), '');
  });

  it("OpenAI's deltas pass as they are and the final adds nothing; nothing heard: the final whole", () => {
    const t = new DeltaText();
    assert.equal(t.take({ kind: 'delta', text: 'he' }), 'he');
    assert.equal(t.take({ kind: 'delta', text: ' was' }), ' was');
    assert.equal(t.finish('he was'), '');
    assert.equal(new DeltaText().finish(' he was not '), 'he was not');
  });
});
