// `ensemble.reject: 'linear'`: the mixed model ranks, the linear model alone decides whether to
// answer. With it on, the answer must be the mixed ranking's best intent, accepted exactly when the
// pack without a second model would accept that intent's probability (and its out-of-scope class
// would not win); with it off ('mixed', or unset) the answers must be exactly the current ones.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CompiledPack, OOS_LABEL, type CascadeResult } from '../../src/intent/engine.ts';
import { normalize } from '../../src/intent/normalize.ts';
import { PackError } from '../../src/intent/pack.ts';
import { toyShopPack } from './toy-shop.ts';

const foreign = ['what is the weather today', 'book a flight to delhi', 'play some music', 'what is my bank balance', 'tell me a joke', 'set an alarm for 6', 'who won the match', 'recharge my phone', 'order a pizza', 'how do i reset my password'];
// Held-out turns: paraphrases, typos, fragments, unseen in-domain questions and foreign turns.
const turns = [
  'mattress delivery date please', 'delivry kab hogi', 'how much is the queen mattress', 'price pls', 'i need a refund for the mattress', 'return it', 'warranty of my mattress',
  'warrenty claim', 'do you have a store near me', 'what material is the mattress made of', 'can i pay by emi', 'is the mattress good for back pain', 'cancel my order',
  'what time is it', 'send money to my friend', 'the bed is too soft', 'my order', 'cost', 'how many years', 'refund status of my order',
];

const pack = (ensemble?: unknown) =>
  toyShopPack({
    // The accept tests must matter: a high accept and an out-of-scope-class threshold.
    thresholds: { accept: 0.5, margin: 0, out_of_scope: 0.4 },
    out_of_scope: { keywords: [], examples: foreign },
    ...(ensemble ? { ensemble } : {}),
  });

/** The local stage's answer without its timing (deterministic answers are left out: the local stage never runs for them). */
function local(p: CompiledPack, text: string): Omit<CascadeResult, 'stageMs'> | null {
  const norm = normalize(text);
  const first = p.deterministic(norm);
  if (first.result) return null;
  const { stageMs: _, ...rest } = p.local(norm, first.candidates, first.oosHits);
  return rest;
}

describe("ensemble.reject: 'linear'", () => {
  const linearOnly = new CompiledPack(pack());
  const decoupled = new CompiledPack(pack({ model: 'complement_nb', weight: 0.75, reject: 'linear' }));
  const coupled = new CompiledPack(pack({ model: 'complement_nb', weight: 0.75 }));

  it('answers the mixed ranking’s best intent, accepted exactly when the linear model alone accepts that intent', () => {
    const t = linearOnly.thresholds;
    let known = 0;
    let rejected = 0;
    let reranked = 0;
    for (const text of turns) {
      const norm = normalize(text);
      if (linearOnly.deterministic(norm).result) continue;
      const vec = decoupled.model!.vectorize(norm.tokens);
      if (vec.idx.length === 0) continue;
      const best = decoupled.model!.rank(vec, 10).find((s) => s.label !== OOS_LABEL)!;
      const all = linearOnly.model!.predict(norm.tokens, 10);
      const prob = (label: string) => all.find((s) => s.label === label)?.prob ?? 0;
      const accepted = !(prob(OOS_LABEL) >= t.out_of_scope || all[0]!.label === OOS_LABEL) && prob(best.label) >= t.accept;
      if (all.find((s) => s.label !== OOS_LABEL)!.label !== best.label) reranked++;
      const r = local(decoupled, text)!;
      assert.equal(r.classification === 'KNOWN', accepted, text);
      if (accepted) {
        known++;
        assert.equal(r.intent!.id, best.label, text);
        assert.equal(r.intent!.confidence, Math.round(prob(best.label) * 1000) / 1000, text);
      } else rejected++;
    }
    // The toy turns must exercise both outcomes and a ranking the second model changed.
    assert.ok(known > 0 && rejected > 0, `${known} known, ${rejected} rejected`);
    assert.ok(reranked > 0, 'no turn where the mix ranks another intent first');
  });

  it('decides otherwise than the coupled ensemble on some turn (the option does something)', () => {
    assert.ok(turns.some((text) => local(decoupled, text)?.classification !== local(coupled, text)?.classification));
  });

  it('at weight 0 answers exactly as the pack without a second model', () => {
    const none = new CompiledPack(pack({ model: 'complement_nb', weight: 0, reject: 'linear' }));
    for (const text of turns) assert.deepEqual(local(none, text), local(linearOnly, text), text);
  });

  it("off ('mixed', the default) reproduces the coupled ensemble's answers exactly", () => {
    const mixed = new CompiledPack(pack({ model: 'complement_nb', weight: 0.75, reject: 'mixed' }));
    for (const text of turns) assert.deepEqual(local(mixed, text), local(coupled, text), text);
  });

  it('refuses an unknown value', () => {
    assert.throws(() => pack({ model: 'complement_nb', weight: 0.5, reject: 'detector' }), PackError);
  });
});
