// A compiled pack and the classification cascade, cheapest first:
//   1. the deterministic lexical matcher (matcher.ts): answers alone when its score clears
//      `thresholds.deterministic` with a clear lead, or when only out-of-scope words matched;
//   2. the local model (classifier.ts), trained here at load from the pack's examples (and its
//      out-of-scope examples as one more class): KNOWN, AMBIGUOUS (top two within `margin`),
//      OUT_OF_SCOPE (the out-of-scope class wins, or out-of-scope words and a weak answer) or
//      UNKNOWN (below `accept`, or no known feature at all).
// A third stage (an LLM constrained to the pack's intent ids) runs in the service, only for what
// these left AMBIGUOUS or UNKNOWN and only when the model has an llm route.
import { performance } from 'node:perf_hooks';
import { augment, type AugmentOptions } from './augment.ts';
import { NgramClassifier, type Example, type Scored } from './classifier.ts';
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
}

export const DEFAULT_THRESHOLDS: Thresholds = { deterministic: 3, accept: 0.35, margin: 0.1, high: 0.8, medium: 0.55, out_of_scope: 0.5, min_similarity: 0 };

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
}

export class CompiledPack {
  readonly thresholds: Thresholds;
  readonly intents: Map<string, IntentDef>;
  readonly matcher: LexicalMatcher;
  readonly model: NgramClassifier | null;
  readonly trainMs: number;

  constructor(readonly pack: IntentPack, opts: CompileOptions = {}) {
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
        for (const text of augment(texts, { ...aug, seed: (aug.seed ?? 1) + i })) examples.push({ tokens: normalize(text).tokens, label: intent.id, synthetic: true });
      });
      if (aug.outOfScope) for (const text of augment(oos, { ...aug, seed: (aug.seed ?? 1) - 1 })) examples.push({ tokens: normalize(text).tokens, label: OOS_LABEL, synthetic: true });
    }
    const labels = new Set(examples.map((e) => e.label));
    this.model = labels.size >= 2 ? NgramClassifier.train(examples, opts.train) : null;
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
      if (m.oosHits > 0) return { result: { ...base, classification: 'OUT_OF_SCOPE', intent: null, classifier_used: 'deterministic' }, candidates, oosHits: m.oosHits };
      return { result: null, candidates, oosHits: 0 };
    }
    const lead = top.score - (second?.score ?? 0);
    if (m.exact || (top.score >= this.thresholds.deterministic && lead >= Math.max(1, top.score / 3))) {
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
    return this.decideLocal(this.scoreLocal(norm, this.thresholds.min_similarity > 0), earlier, oosHits);
  }

  /**
   * The local model's scores of a turn (null: no model, or no feature of the turn is known),
   * apart from the thresholds, so an evaluation can sweep thresholds without scoring again.
   */
  scoreLocal(norm: Normalized, withSimilarity = false): Scored[] | null {
    if (!this.model) return null;
    const vec = this.model.vectorize(norm.tokens);
    if (vec.idx.length === 0) return null;
    return this.model.rank(vec, 4, withSimilarity);
  }

  /** Stage 2's answer from its scores and the thresholds (the pack's unless given). */
  decideLocal(scored: Scored[] | null, earlier: Candidate[], oosHits: number, t: Thresholds = this.thresholds): CascadeResult {
    const base = { stageMs: {} };
    if (!this.model) return { ...base, classification: 'UNKNOWN', intent: null, candidates: earlier, classifier_used: 'local_model' };
    if (!scored) {
      return { ...base, classification: oosHits > 0 ? 'OUT_OF_SCOPE' : 'UNKNOWN', intent: null, candidates: earlier, classifier_used: 'local_model' };
    }
    const oosProb = scored.find((s) => s.label === OOS_LABEL)?.prob ?? 0;
    const ranked = scored.filter((s) => s.label !== OOS_LABEL);
    const candidates = [...earlier, ...ranked.slice(0, 3).map((s) => ({ id: s.label, score: round(s.prob), source: 'local_model' as const }))];
    const [p1, p2] = ranked;
    const out = (classification: Classification): CascadeResult => ({ ...base, classification, intent: null, candidates, classifier_used: 'local_model' });
    if (!p1 || oosProb >= t.out_of_scope || scored[0]?.label === OOS_LABEL) return out('OUT_OF_SCOPE');
    if (p1.prob < t.accept || (p1.similarity ?? 1) < t.min_similarity) return out(oosHits > 0 || oosProb > p1.prob ? 'OUT_OF_SCOPE' : 'UNKNOWN');
    if (p2 && p1.prob - p2.prob < t.margin) return out('AMBIGUOUS');
    const confidence = round(p1.prob);
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
