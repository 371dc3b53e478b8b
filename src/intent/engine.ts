// A compiled pack and the classification cascade, cheapest first:
//   1. the deterministic lexical matcher (matcher.ts): answers alone when its score clears
//      `thresholds.deterministic` with a clear lead, or when only out-of-scope words matched;
//   2. the local model (classifier.ts), trained here at load from the pack's examples (and its
//      out-of-scope examples as one more class): KNOWN, AMBIGUOUS (top two within `margin`),
//      OUT_OF_SCOPE (the out-of-scope class wins, or out-of-scope words and a weak answer) or
//      UNKNOWN (below `accept`, or no known feature at all). With `ensemble`, a second model of
//      another family (ensemble.ts) is trained beside it and their probabilities are mixed (with
//      `ensemble.reject: 'linear'` the mix ranks, the linear model alone decides KNOWN or not;
//      with `'split'` the out-of-scope-class tests read the mix, the accept test the linear model).
//      With `out_of_scope.detector`, a small learned model (detector.ts) takes the accept/reject
//      decision instead of those thresholds.
// A third stage (an LLM constrained to the pack's intent ids) runs in the service, only for what
// these left AMBIGUOUS or UNKNOWN and only when the model has an llm route.
import { performance } from 'node:perf_hooks';
import { augment, noisy, type AugmentOptions } from './augment.ts';
import { NgramClassifier, mulberry32, shuffle, type Example, type NeighbourMix, type Scored, type TurnView } from './classifier.ts';
import { AcceptDetector, DEFAULT_DETECTOR, detectorFeatures, type DetectorOptions } from './detector.ts';
import { LexicalMatcher } from './matcher.ts';
import { normalize, type Normalized } from './normalize.ts';
import type { IntentDef, IntentPack } from './pack.ts';
import type { IntentDecisions } from '../../machines/intent-session.machine.ts';

export const OOS_LABEL = '__OUT_OF_SCOPE__';

export type Classification = 'KNOWN' | 'AMBIGUOUS' | 'UNKNOWN' | 'OUT_OF_SCOPE';
export type Band = 'HIGH' | 'MEDIUM' | 'LOW';
export type Stage = 'deterministic' | 'local_model' | 'llm_fallback';

export interface Candidate {
  id: string;
  score: number;
  source: Stage | 'context';
}

export interface CascadeResult {
  classification: Classification;
  intent: { id: string; confidence: number; band: Band } | null;
  candidates: Candidate[];
  classifier_used: Stage | 'none';
  /** Time per stage that ran, in ms (evaluation and metrics). */
  stageMs: Partial<Record<Stage, number>>;
}

export interface Thresholds {
  deterministic: number;
  accept: number;
  margin: number;
  high: number;
  medium: number;
  out_of_scope: number;
  /**
   * With an example memory (small packs): the cosine the best intent's nearest training example
   * must reach for KNOWN; below it the turn is unlike anything the pack was taught.
   */
  min_similarity: number;
  /**
   * With an example memory: the cosine the nearest out-of-scope example must reach for a turn the
   * local model turns down to be OUT_OF_SCOPE rather than UNKNOWN (0: off). A turn like nothing
   * the pack lists, in scope or out ("kuch problem hai", gibberish), is then UNKNOWN, whose
   * fallback asks back, instead of OUT_OF_SCOPE, whose fallback may close the conversation.
   * Out-of-scope vocabulary found by the matcher counts as recognized.
   */
  out_of_scope_similarity: number;
  /** With an out-of-scope detector: its probability a turn needs for KNOWN (it then replaces accept, out_of_scope and min_similarity). */
  detector: number;
}

export const DEFAULT_THRESHOLDS: Thresholds = {
  deterministic: 3,
  accept: 0.35,
  margin: 0.1,
  high: 0.8,
  medium: 0.55,
  out_of_scope: 0.5,
  min_similarity: 0,
  out_of_scope_similarity: 0,
  detector: 0.5,
};

/** The local model's scores of a turn, apart from the thresholds (`scoreLocal`, `decideLocal`). */
export interface LocalScores {
  /** The top labels, best first (the out-of-scope class among them when it ranks). */
  ranked: Scored[];
  /** With a detector: its probability that the best intent is the answer and the turn in scope. */
  inScope?: number;
  /**
   * With `ensemble.reject: 'linear'` or `'split'`: what the accept tests read (which of them:
   * `reads`) in place of the ranking's probabilities, the model without its second model (linear
   * + neighbour vote): its probability of the ranking's best intent and of the out-of-scope class,
   * and whether the out-of-scope class is its best label. The mix inflates both intents it was never taught and foreign turns, the
   * linear model much less so (docs/intent-evaluation.md, the ensemble trial).
   */
  linear?: { best: number; oos: number; oosFirst: boolean };
  /**
   * Which tests read `linear` (when present; default 'linear'): 'linear' all of them — `accept`,
   * the out-of-scope-class tests (its out-of-scope probability ≥ `out_of_scope`, or its best label)
   * and whether a turned-down turn is OUT_OF_SCOPE rather than UNKNOWN; 'split' only `accept` (and
   * so the reported confidence), the out-of-scope-class tests reading the ranking's (mixed)
   * probabilities as without `linear`. `min_similarity` reads the ranking's best intent's
   * nearest-example cosine either way (it does not depend on the mix).
   */
  reads?: 'linear' | 'split';
}

const round = (n: number) => Math.round(n * 1000) / 1000;

export interface CompileOptions {
  /** Local model training options (epochs, step, seed; the defaults suit packs of any size). */
  train?: Parameters<typeof NgramClassifier.train>[1];
  /** Derive keywords from examples (default on). */
  deriveKeywords?: { minCount: number; purity: number; weight: number } | false;
  /**
   * Noisy variants of the examples added to the local model's training (augment.ts; default none):
   * of the intents' examples, and of the out-of-scope examples too when `outOfScope` is set.
   * The matcher learns from the pack's own examples only.
   */
  augment?: AugmentOptions & { outOfScope?: boolean };
  /** The neighbour vote's share in the local model's probabilities (default none), set before the detector learns. */
  mix?: NeighbourMix;
  /**
   * The out-of-scope detector's training, over the pack's `out_of_scope.detector` (false: none even
   * if the pack asks; the detector's own folds are compiled with it).
   */
  detector?: Partial<DetectorOptions> | false;
}

export class CompiledPack {
  readonly thresholds: Thresholds;
  readonly intents: Map<string, IntentDef>;
  readonly matcher: LexicalMatcher;
  readonly model: NgramClassifier | null;
  /** The learned accept/reject decision (pack `out_of_scope.detector`; needs out-of-scope examples). */
  readonly detector: AcceptDetector | null;
  readonly trainMs: number;
  private readonly detectorOptions: DetectorOptions;
  /** The local model's index of the out-of-scope class (−1: none, or no model). */
  private readonly oosIndex: number;
  /** What the accept tests read besides the ranking (`ensemble.reject` other than 'mixed', with a second model); null: the ranking alone. */
  private readonly reads: 'linear' | 'split' | null;

  constructor(
    readonly pack: IntentPack,
    opts: CompileOptions = {},
  ) {
    const started = performance.now();
    this.thresholds = { ...DEFAULT_THRESHOLDS, ...pack.thresholds };
    this.intents = new Map(pack.intents.map((i) => [i.id, i]));
    this.matcher = new LexicalMatcher({
      intents: pack.intents.map((i) => ({ id: i.id, examples: Object.values(i.examples).flat(), patterns: i.patterns ?? [], keywords: i.keywords ?? {} })),
      outOfScope: pack.out_of_scope.keywords,
      ...(opts.deriveKeywords !== undefined ? { derive: opts.deriveKeywords } : {}),
    });
    const examples: Example[] = [];
    for (const intent of pack.intents) {
      for (const text of Object.values(intent.examples).flat()) examples.push({ tokens: normalize(text).tokens, label: intent.id });
    }
    const oos = pack.out_of_scope.examples ?? [];
    for (const text of oos) examples.push({ tokens: normalize(text).tokens, label: OOS_LABEL });
    const aug = opts.augment;
    if (aug && aug.copies > 0) {
      pack.intents.forEach((intent, i) => {
        const texts = Object.values(intent.examples).flat();
        for (const text of augment(texts, { ...aug, seed: (aug.seed ?? 1) + i }))
          examples.push({ tokens: normalize(text).tokens, label: intent.id, synthetic: true });
      });
      if (aug.outOfScope)
        for (const text of augment(oos, { ...aug, seed: (aug.seed ?? 1) - 1 }))
          examples.push({ tokens: normalize(text).tokens, label: OOS_LABEL, synthetic: true });
    }
    const labels = new Set(examples.map((e) => e.label));
    const ensemble = pack.ensemble;
    const train = ensemble
      ? { ...opts.train, second: { kind: ensemble.model, ...(ensemble.alpha !== undefined ? { alpha: ensemble.alpha } : {}) } }
      : opts.train;
    this.model = labels.size >= 2 ? NgramClassifier.train(examples, train) : null;
    if (ensemble) this.model?.setEnsembleWeight(ensemble.weight);
    if (opts.mix) this.model?.setNeighbourMix(opts.mix);
    this.oosIndex = this.model ? this.model.labels.indexOf(OOS_LABEL) : -1;
    const reject = ensemble?.reject ?? 'mixed';
    this.reads = reject !== 'mixed' && this.model?.hasSecond() ? reject : null;
    this.detectorOptions = { ...DEFAULT_DETECTOR, ...pack.out_of_scope.detector, ...(opts.detector || {}) };
    const wanted = pack.out_of_scope.detector !== undefined && opts.detector !== false && oos.length > 0 && this.model !== null;
    this.detector = wanted ? learnDetector(pack, opts, this.detectorOptions) : null;
    this.trainMs = performance.now() - started;
  }

  band(confidence: number): Band {
    return confidence >= this.thresholds.high ? 'HIGH' : confidence >= this.thresholds.medium ? 'MEDIUM' : 'LOW';
  }

  /** Stage 1 alone (evaluation reports it separately). */
  deterministic(norm: Normalized): { result: CascadeResult | null; candidates: Candidate[]; oosHits: number } {
    const m = this.matcher.match(norm.tokens, norm.text);
    const candidates: Candidate[] = m.scores.slice(0, 3).map((s) => ({ id: s.intent, score: round(s.score), source: 'deterministic' }));
    const [top, second] = m.scores;
    const base = { candidates, stageMs: {} };
    if (!top) {
      if (m.oosHits > 0)
        return { result: { ...base, classification: 'OUT_OF_SCOPE', intent: null, classifier_used: 'deterministic' }, candidates, oosHits: m.oosHits };
      return { result: null, candidates, oosHits: 0 };
    }
    const lead = top.score - (second?.score ?? 0);
    // Out-of-scope vocabulary beside an intent's keywords ("naya sim chahiye" has "sim"): a rule
    // cannot tell which wins, so the local model, which learned the out-of-scope examples, decides.
    const clear = m.oosHits === 0 && top.score >= this.thresholds.deterministic && lead >= Math.max(1, top.score / 3);
    if (m.exact || clear) {
      // A rule, not a probability: an exact example is 0.99; otherwise the lead maps onto 0.6–0.98.
      const confidence = m.exact ? 0.99 : round(Math.min(0.98, 0.6 + 0.08 * lead));
      return {
        result: { ...base, classification: 'KNOWN', intent: { id: top.intent, confidence, band: this.band(confidence) }, classifier_used: 'deterministic' },
        candidates,
        oosHits: m.oosHits,
      };
    }
    return { result: null, candidates, oosHits: m.oosHits };
  }

  /** Stage 2 alone, given what stage 1 found. */
  local(norm: Normalized, earlier: Candidate[], oosHits: number): CascadeResult {
    const t = this.thresholds;
    return this.decideLocal(this.scoreLocal(norm, t.min_similarity > 0 || t.out_of_scope_similarity > 0, earlier, oosHits), earlier, oosHits);
  }

  /**
   * The local model's scores of a turn (null: no model, or no feature of the turn is known),
   * apart from the thresholds, so an evaluation can sweep thresholds without scoring again.
   * `earlier` and `oosHits` are what stage 1 found (the detector reads them).
   */
  scoreLocal(norm: Normalized, withSimilarity = false, earlier: Candidate[] = [], oosHits = 0): LocalScores | null {
    const model = this.model;
    if (!model) return null;
    if (!this.detector) {
      const vec = model.vectorize(norm.tokens);
      if (vec.idx.length === 0) return null;
      const sims = model.nearestFor(vec, withSimilarity);
      if (!this.reads) return { ranked: model.rankWith(vec, 4, sims) };
      const { ranked, linear: p } = model.rankWithLinear(vec, 4, sims);
      const oos = this.oosIndex;
      const best = ranked.find((s) => s.label !== OOS_LABEL);
      let first = 0;
      for (let c = 1; c < p.length; c++) if (p[c]! > p[first]!) first = c;
      const at = best ? model.labels.indexOf(best.label) : -1;
      return { ranked, linear: { best: at >= 0 ? p[at]! : 0, oos: oos >= 0 ? p[oos]! : 0, oosFirst: oos >= 0 && first === oos }, reads: this.reads };
    }
    const meta = this.metaFeatures(norm, earlier, oosHits, this.detectorOptions);
    if (!meta) return null;
    return { ranked: model.top(meta.view.mixed, 4, meta.view.similarity), inScope: this.detector.score(meta.x) };
  }

  /**
   * What the detector reads of a turn (detector.ts `detectorFeatures`) and the local model's best
   * intent, its would-be answer (null: no model, or no feature of the turn is known).
   */
  metaFeatures(
    norm: Normalized,
    earlier: Candidate[],
    oosHits: number,
    shape: Pick<DetectorOptions, 'quadratic' | 'hinges'>,
  ): { view: TurnView; candidate: number; x: number[] } | null {
    const model = this.model;
    if (!model) return null;
    const view = model.view(norm.tokens);
    if (view.vec.idx.length === 0) return null;
    const oos = this.oosIndex;
    let candidate = -1;
    view.mixed.forEach((p, c) => {
      if (c !== oos && (candidate < 0 || p > view.mixed[candidate]!)) candidate = c;
    });
    if (candidate < 0) return null;
    const lexical = earlier.find((c) => c.source === 'deterministic');
    const x = detectorFeatures(
      { view, candidate, oos, lexical: { score: lexical?.score ?? 0, candidate: lexical ? model.labels.indexOf(lexical.id) : -1, oosHits } },
      shape,
    );
    return { view, candidate, x };
  }

  /** Stage 2's answer from its scores and the thresholds (the pack's unless given). */
  decideLocal(scores: LocalScores | null, earlier: Candidate[], oosHits: number, t: Thresholds = this.thresholds): CascadeResult {
    const base = { stageMs: {} };
    if (!this.model) return { ...base, classification: 'UNKNOWN', intent: null, candidates: earlier, classifier_used: 'local_model' };
    if (!scores) {
      return { ...base, classification: oosHits > 0 ? 'OUT_OF_SCOPE' : 'UNKNOWN', intent: null, candidates: earlier, classifier_used: 'local_model' };
    }
    const scored = scores.ranked;
    const oosProb = scored.find((s) => s.label === OOS_LABEL)?.prob ?? 0;
    const ranked = scored.filter((s) => s.label !== OOS_LABEL);
    const candidates = [...earlier, ...ranked.slice(0, 3).map((s) => ({ id: s.label, score: round(s.prob), source: 'local_model' as const }))];
    const [p1, p2] = ranked;
    const out = (classification: Classification): CascadeResult => ({ ...base, classification, intent: null, candidates, classifier_used: 'local_model' });
    if (!p1) return out('OUT_OF_SCOPE');
    // What the tests read: the ranking's probabilities, or the linear model's (`linear`): all the
    // tests with reads 'linear', only `accept` (and the confidence) with 'split' (LocalScores.reads).
    const ranking = { best: p1.prob, oos: oosProb, oosFirst: scored[0]?.label === OOS_LABEL };
    const lin = scores.linear;
    const oosGate = lin && scores.reads !== 'split' ? lin : ranking;
    const acceptProb = lin ? lin.best : p1.prob;
    // Out of scope needs the turn to resemble what the pack lists as such (`out_of_scope_similarity`).
    const oosSimilarity = scored.find((s) => s.label === OOS_LABEL)?.similarity;
    const recognized = oosHits > 0 || t.out_of_scope_similarity <= 0 || (oosSimilarity ?? 1) >= t.out_of_scope_similarity;
    const turnedDown = () => out(oosHits > 0 || (recognized && oosGate.oos > oosGate.best) ? 'OUT_OF_SCOPE' : 'UNKNOWN');
    if (scores.inScope !== undefined) {
      // The detector alone decides whether to answer (it has read the out-of-scope class too).
      if (scores.inScope < t.detector) return turnedDown();
    } else {
      if (oosGate.oos >= t.out_of_scope || oosGate.oosFirst) return out(recognized ? 'OUT_OF_SCOPE' : 'UNKNOWN');
      if (acceptProb < t.accept || (p1.similarity ?? 1) < t.min_similarity) return turnedDown();
    }
    // Which intent is the ranking's business, so the margin reads the ranking's probabilities.
    if (p2 && p1.prob - p2.prob < t.margin) return out('AMBIGUOUS');
    // The confidence is the probability the accept test read (the ranking's unless `linear`).
    const confidence = round(acceptProb);
    return { ...base, classification: 'KNOWN', intent: { id: p1.label, confidence, band: this.band(confidence) }, candidates, classifier_used: 'local_model' };
  }

  /** Stages 1 and 2 of the cascade. */
  classify(norm: Normalized): CascadeResult {
    const t0 = performance.now();
    const first = this.deterministic(norm);
    const t1 = performance.now();
    if (first.result) {
      first.result.stageMs = { deterministic: t1 - t0 };
      return first.result;
    }
    const second = this.local(norm, first.candidates, first.oosHits);
    second.stageMs = { deterministic: t1 - t0, local_model: performance.now() - t1 };
    return second;
  }

  /** What the decision engine needs about an intent (sent to the session actor). */
  decisionsFor(id: string): IntentDecisions | null {
    const intent = this.intents.get(id);
    if (!intent) return null;
    return {
      confirm: intent.confirm,
      initial: intent.decisions.initial,
      ...(intent.decisions.confirmed ? { confirmed: intent.decisions.confirmed } : {}),
      ...(intent.decisions.denied ? { denied: intent.decisions.denied } : {}),
      ...(intent.entities ? { required: intent.entities.required, missing: intent.entities.missing } : {}),
    };
  }
}

/**
 * Trains the out-of-scope detector from out-of-fold predictions. Fold j compiles the pack without
 * its examples of fold j, without a j-th of its intents (held out whole: in-domain questions it
 * was never taught) and without its out-of-scope examples of fold j, then scores what it did not
 * see. Positives: held-out examples of kept intents whose best intent is right. Negatives: those
 * answered wrong and the held-out intents' examples (half of the negatives' weight), and the
 * held-out out-of-scope examples (the other half); positives and negatives weigh the same. Turns
 * the deterministic matcher answers alone never reach the detector, so they do not train it.
 */
function learnDetector(pack: IntentPack, opts: CompileOptions, d: DetectorOptions): AcceptDetector | null {
  const K = Math.max(2, d.folds);
  const rand = mulberry32(d.seed);
  const group = new Map(
    shuffle(
      pack.intents.map((i) => i.id),
      rand,
    ).map((id, n) => [id, n % K]),
  );
  const foldOf = (n: number) => {
    const order = shuffle(
      Array.from({ length: n }, (_, i) => i),
      rand,
    );
    const fold = new Int32Array(n);
    order.forEach((i, at) => (fold[i] = at % K));
    return fold;
  };
  const items = pack.intents.flatMap((intent) =>
    Object.entries(intent.examples).flatMap(([lang, texts]) => texts.map((text) => ({ intent: intent.id, lang, text }))),
  );
  const itemFold = foldOf(items.length);
  const oos = pack.out_of_scope.examples ?? [];
  const oosFold = d.blocks ? Int32Array.from(oos, (_, n) => Math.floor((n * K) / oos.length)) : foldOf(oos.length);
  const noise = mulberry32(d.seed + 7919);
  const { detector: _, ...outOfScope } = pack.out_of_scope;
  const rows: { x: number[]; y: number; kind: 0 | 1 | 2 }[] = [];
  for (let j = 0; j < K; j++) {
    const kept = pack.intents
      .filter((intent) => group.get(intent.id) !== j)
      .map((intent) => ({ ...intent, examples: Object.fromEntries(Object.keys(intent.examples).map((lang) => [lang, [] as string[]])) }));
    if (kept.length === 0) continue;
    const byId = new Map(kept.map((i) => [i.id, i]));
    items.forEach((it, n) => {
      const kept = itemFold[n] !== j ? byId.get(it.intent) : undefined;
      if (kept) kept.examples[it.lang]!.push(it.text);
    });
    const sub: IntentPack = { ...pack, intents: kept, out_of_scope: { ...outOfScope, examples: oos.filter((_, n) => oosFold[n] !== j) } };
    const fold = new CompiledPack(sub, { ...opts, detector: false });
    const score = (text: string, gold: string | null, kind: 0 | 1 | 2) => {
      for (const t of [text, ...Array.from({ length: d.noisy }, () => noisy(text, noise))]) {
        const norm = normalize(t);
        const first = fold.deterministic(norm);
        if (first.result) continue;
        const meta = fold.metaFeatures(norm, first.candidates, first.oosHits, d);
        if (!meta) continue;
        const right = gold !== null && fold.model!.labels[meta.candidate] === gold;
        if (gold !== null && !right && !d.misclassified) continue;
        rows.push({ x: meta.x, y: right ? 1 : 0, kind: right ? 0 : kind });
      }
    };
    items.forEach((it, n) => {
      if (group.get(it.intent) === j) score(it.text, null, 1);
      else if (itemFold[n] === j) score(it.text, it.intent, 1);
    });
    oos.forEach((text, n) => {
      if (oosFold[n] === j) score(text, null, 2);
    });
  }
  const count = [0, 0, 0];
  for (const r of rows) count[r.kind]!++;
  if (count[0] === 0 || count[1]! + count[2]! === 0) return null;
  // Positives weigh a half; the two kinds of negatives a quarter each (or a half when alone).
  const share = [0.5, count[2] ? 0.25 : 0.5, count[1] ? 0.25 : 0.5];
  const ws = rows.map((r) => share[r.kind]! / count[r.kind]!);
  return AcceptDetector.fit(
    rows.map((r) => r.x),
    rows.map((r) => r.y),
    ws,
    d.l2,
  );
}
