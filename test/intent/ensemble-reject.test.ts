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

const foreign = [
  'what is the weather today',
  'book a flight to delhi',
  'play some music',
  'what is my bank balance',
  'tell me a joke',
  'set an alarm for 6',
  'who won the match',
  'recharge my phone',
  'order a pizza',
  'how do i reset my password',
];
// Held-out turns: paraphrases, typos, fragments, unseen in-domain questions and foreign turns.
const turns = [
  'mattress delivery date please',
  'delivry kab hogi',
  'how much is the queen mattress',
  'price pls',
  'i need a refund for the mattress',
  'return it',
  'warranty of my mattress',
  'warrenty claim',
  'do you have a store near me',
  'what material is the mattress made of',
  'can i pay by emi',
  'is the mattress good for back pain',
  'cancel my order',
  'what time is it',
  'send money to my friend',
  'the bed is too soft',
  'my order',
  'cost',
  'how many years',
  'refund status of my order',
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

// `ensemble.reject: 'split'`: the out-of-scope-class tests read the MIXED probabilities (the mix's
// out-of-scope probability against `out_of_scope`, and whether the out-of-scope class is the mix's
// best label); `accept` reads the LINEAR model's probability (the pack without a second model) of
// the mix's best intent, and so does the confidence; `min_similarity` that intent's nearest-example
// cosine. Each expectation below is computed from the two models separately.
describe("ensemble.reject: 'split'", () => {
  const splitPack = (thresholds: Record<string, number> = {}) => {
    const p = pack({ model: 'complement_nb', weight: 0.75, reject: 'split' });
    return new CompiledPack({ ...p, thresholds: { ...p.thresholds, ...thresholds } });
  };
  const split = splitPack();
  const linearOnly = new CompiledPack(pack());
  const decoupled = new CompiledPack(pack({ model: 'complement_nb', weight: 0.75, reject: 'linear' }));
  const coupled = new CompiledPack(pack({ model: 'complement_nb', weight: 0.75 }));

  /** Each test's verdict on a turn, read from the mix and from the linear model apart (null: the local stage does not run). */
  function verdicts(text: string, minSimilarity = 0) {
    const norm = normalize(text);
    if (linearOnly.deterministic(norm).result) return null;
    const vec = split.model!.vectorize(norm.tokens);
    if (vec.idx.length === 0) return null;
    const t = split.thresholds;
    const mixed = split.model!.rank(vec, 10, true);
    const mixedProb = (label: string) => mixed.find((s) => s.label === label)?.prob ?? 0;
    const best = mixed.find((s) => s.label !== OOS_LABEL)!;
    const linear = linearOnly.model!.predict(norm.tokens, 10);
    const linearProb = (label: string) => linear.find((s) => s.label === label)?.prob ?? 0;
    return {
      best,
      linearBest: linearProb(best.label),
      mixedOosFails: mixedProb(OOS_LABEL) >= t.out_of_scope || mixed[0]!.label === OOS_LABEL,
      linearOosFails: linearProb(OOS_LABEL) >= t.out_of_scope || linear[0]!.label === OOS_LABEL,
      mixedAccepts: best.prob >= t.accept,
      linearAccepts: linearProb(best.label) >= t.accept,
      similar: best.similarity! >= minSimilarity,
      oosAboveBest: mixedProb(OOS_LABEL) > best.prob,
    };
  }

  function check(p: CompiledPack, minSimilarity: number) {
    const seen = { known: 0, oos: 0, accept: 0, similarity: 0 };
    for (const text of turns) {
      const v = verdicts(text, minSimilarity);
      if (!v) continue;
      const r = local(p, text)!;
      const expected = v.mixedOosFails ? 'OUT_OF_SCOPE' : !v.linearAccepts || !v.similar ? (v.oosAboveBest ? 'OUT_OF_SCOPE' : 'UNKNOWN') : 'KNOWN';
      assert.equal(r.classification, expected, text);
      if (expected === 'KNOWN') {
        seen.known++;
        assert.equal(r.intent!.id, v.best.label, text);
        assert.equal(r.intent!.confidence, Math.round(v.linearBest * 1000) / 1000, text);
      } else if (v.mixedOosFails) seen.oos++;
      else if (!v.linearAccepts) seen.accept++;
      else seen.similarity++;
    }
    return seen;
  }

  it('the out-of-scope-class tests read the mix, accept and the confidence the linear model’s probability of the mix’s best intent', () => {
    const seen = check(split, 0);
    assert.ok(seen.known > 0 && seen.oos > 0 && seen.accept > 0, JSON.stringify(seen));
  });

  it('min_similarity reads the mix’s best intent’s nearest-example cosine', () => {
    const seen = check(splitPack({ min_similarity: 0.5 }), 0.5);
    assert.ok(seen.known > 0 && seen.similarity > 0, JSON.stringify(seen));
  });

  it('reads which model it says: a turn where only the out-of-scope-class tests disagree, and one where only accept does', () => {
    const vs = turns.map((text) => verdicts(text)).filter((v) => v !== null);
    // The mix's out-of-scope test, not the linear model's, decides some turn ('linear' would differ there)...
    assert.ok(
      vs.some((v) => v.mixedOosFails !== v.linearOosFails),
      'the two out-of-scope-class tests agree on every turn',
    );
    // ...and the linear model's accept test, not the mix's, another ('mixed' would differ there).
    assert.ok(
      vs.some((v) => !v.mixedOosFails && v.mixedAccepts !== v.linearAccepts),
      'the two accept tests agree on every turn',
    );
    const answers = (p: CompiledPack) => turns.map((text) => local(p, text)?.classification);
    assert.notDeepEqual(answers(split), answers(decoupled));
    assert.notDeepEqual(answers(split), answers(coupled));
  });

  it('at weight 0 answers exactly as the pack without a second model', () => {
    const none = new CompiledPack(pack({ model: 'complement_nb', weight: 0, reject: 'split' }));
    for (const text of turns) assert.deepEqual(local(none, text), local(linearOnly, text), text);
  });
});
