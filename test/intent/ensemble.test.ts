// The optional second model (ensemble.ts) beside the logistic regression: on its own it must answer
// a toy pack's unseen turns, train the same every time, give probabilities; mixed in at weight 0 it
// must leave the linear model's answers exactly as they were; and a pack gets it only when it asks.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { NgramClassifier, type Example } from '../../src/intent/classifier.ts';
import { CompiledPack } from '../../src/intent/engine.ts';
import { normalize } from '../../src/intent/normalize.ts';
import { PackError } from '../../src/intent/pack.ts';
import { taught, toyShopPack } from './toy-shop.ts';

const examples: Example[] = Object.entries(taught).flatMap(([label, texts]) => texts.map((t) => ({ tokens: normalize(t).tokens, label })));
const heldOut: [string, string][] = [
  ['mattress delivery date please', 'DELIVERY'],
  ['delivry kab hogi', 'DELIVERY'],
  ['how much is the queen mattress', 'PRICE'],
  ['price pls', 'PRICE'],
  ['i need a refund for the mattress', 'RETURN'],
  ['return it', 'RETURN'],
  ['warranty of my mattress', 'WARRANTY'],
  ['warrenty claim', 'WARRANTY'],
];
const tokens = (text: string) => normalize(text).tokens;

for (const kind of ['complement_nb', 'nearest_centroid', 'char_nb'] as const) {
  describe(`second model: ${kind}`, () => {
    const alone = NgramClassifier.train(examples, { second: { kind } });
    alone.setEnsembleWeight(1);

    it('answers held-out turns of a toy pack on its own', () => {
      const right = heldOut.filter(([text, gold]) => alone.predict(tokens(text), 1)[0]!.label === gold).length;
      assert.ok(right >= 7, `${right} of ${heldOut.length}`);
    });

    it('gives probabilities (they sum to 1, the best is sure of a taught turn)', () => {
      const all = alone.predict(tokens('track my delivery'), 10);
      assert.ok(Math.abs(all.reduce((a, s) => a + s.prob, 0) - 1) < 1e-9);
      assert.equal(all[0]!.label, 'DELIVERY');
      assert.ok(all[0]!.prob > 0.5);
    });

    it('trains to the same probabilities every time', () => {
      const again = NgramClassifier.train(examples, { second: { kind } });
      again.setEnsembleWeight(1);
      for (const [text] of heldOut) assert.deepEqual(again.predict(tokens(text)), alone.predict(tokens(text)));
    });

    it('mixed in at weight 0 leaves the linear model exactly as it was; a share moves it', () => {
      const linear = NgramClassifier.train(examples);
      const mixed = NgramClassifier.train(examples, { second: { kind } });
      mixed.setEnsembleWeight(0);
      for (const [text] of heldOut) assert.deepEqual(mixed.predict(tokens(text)), linear.predict(tokens(text)));
      mixed.setEnsembleWeight(0.5);
      assert.notDeepEqual(mixed.predict(tokens('price pls')), linear.predict(tokens('price pls')));
    });
  });
}

describe('pack ensemble setting', () => {
  const pack = (ensemble?: unknown) => toyShopPack(ensemble ? { ensemble } : {});

  it('is off unless the pack asks, and then mixed in at its weight', () => {
    assert.equal(new CompiledPack(pack()).model!.hasSecond(), false);
    const asked = new CompiledPack(pack({ model: 'complement_nb', weight: 0.5 }));
    assert.equal(asked.model!.hasSecond(), true);
    assert.equal(asked.model!.getEnsembleWeight(), 0.5);
  });

  it('refuses an unknown model or a weight above 1', () => {
    assert.throws(() => pack({ model: 'svm', weight: 0.5 }), PackError);
    assert.throws(() => pack({ model: 'nearest_centroid', weight: 2 }), PackError);
  });
});
