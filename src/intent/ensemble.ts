// A second local model of another family, mixed into the logistic regression's probabilities
// (pack `ensemble`, off by default). Both kinds are linear scorers over the same TF-IDF vectors,
// trained in one pass over the examples (no SGD, no randomness):
//   - complement naive Bayes (Rennie et al. 2003, "Tackling the poor assumptions of naive Bayes
//     text classifiers", TWCNB): each label's weights are the log of the smoothed feature mass of
//     every OTHER label's examples, normalized to unit L1, and a turn scores −x·w (it looks unlike
//     what the other labels say). Estimating from the complement uses far more data per label than
//     from the label itself, which is why it is strong on small, short-text, unbalanced data;
//   - nearest centroid (Rocchio): each label's L2-normed mean vector, a turn scores its cosine;
//   - multinomial naive Bayes over the character n-gram features only (their TF-IDF values as
//     counts, uniform prior): each label's weights are the log of its own smoothed feature mass,
//     a model that spells rather than reads, for turns whose words are misspelt or cut short.
// Their scores are not probabilities, so a softmax temperature is fitted at training on
// out-of-fold scores of the taught examples (negative log-likelihood, each example at its
// training weight), as the evaluation calibrates the logistic regression on a validation split.
import { fitTemperature, softmax, type ScoredRow } from './calibration.ts';
import type { SparseVec } from './vectors.ts';

export type SecondKind = 'complement_nb' | 'nearest_centroid' | 'char_nb';

export interface SecondOptions {
  kind: SecondKind;
  /** The naive Bayes models' additive smoothing of every feature's mass (default 1, Rennie's). */
  alpha?: number;
  /** Folds of the out-of-fold temperature fit (default 5). */
  folds?: number;
}

/**
 * Weights of one kind from examples (ys are label indices, ws training weights; `used[f]` false:
 * feature f is left out, its weights 0).
 */
function fitWeights(kind: SecondKind, vecs: SparseVec[], ys: number[], ws: number[], C: number, F: number, alpha: number, used: Uint8Array): Float32Array {
  const mass = new Float64Array(F * C);
  for (let n = 0; n < vecs.length; n++) {
    const { idx, val } = vecs[n]!;
    const base = ys[n]!;
    for (let k = 0; k < idx.length; k++) mass[idx[k]! * C + base]! += ws[n]! * val[k]!;
  }
  const W = new Float32Array(F * C);
  if (kind === 'char_nb') {
    let V = 0;
    for (let f = 0; f < F; f++) V += used[f]!;
    const labelTotal = new Float64Array(C);
    for (let f = 0; f < F; f++) if (used[f]) for (let c = 0; c < C; c++) labelTotal[c]! += mass[f * C + c]!;
    for (let f = 0; f < F; f++) {
      if (!used[f]) continue;
      for (let c = 0; c < C; c++) W[f * C + c] = Math.log((alpha + mass[f * C + c]!) / (alpha * V + labelTotal[c]!));
    }
    return W;
  }
  if (kind === 'nearest_centroid') {
    const norm = new Float64Array(C);
    for (let i = 0; i < mass.length; i++) norm[i % C]! += mass[i]! * mass[i]!;
    for (let i = 0; i < mass.length; i++) W[i] = norm[i % C]! > 0 ? mass[i]! / Math.sqrt(norm[i % C]!) : 0;
    return W;
  }
  // Complement mass of label c for feature f: all labels' mass minus c's own.
  const total = new Float64Array(F);
  const labelTotal = new Float64Array(C);
  for (let f = 0; f < F; f++) {
    for (let c = 0; c < C; c++) {
      total[f]! += mass[f * C + c]!;
      labelTotal[c]! += mass[f * C + c]!;
    }
  }
  const all = labelTotal.reduce((a, b) => a + b, 0);
  const l1 = new Float64Array(C);
  for (let f = 0; f < F; f++) {
    for (let c = 0; c < C; c++) {
      const w = Math.log((alpha + total[f]! - mass[f * C + c]!) / (alpha * F + all - labelTotal[c]!));
      W[f * C + c] = w;
      l1[c]! += Math.abs(w);
    }
  }
  // Score −x·w, normalized so that labels with more complement text do not weigh more (to a mean
  // absolute weight of 1 rather than Rennie's unit L1: the same ranking, scores near 1).
  for (let i = 0; i < W.length; i++) W[i] = (-W[i]! * F) / l1[i % C]!;
  return W;
}

function scoresInto(W: Float32Array, C: number, vec: SparseVec, z: Float64Array): Float64Array {
  z.fill(0);
  for (let k = 0; k < vec.idx.length; k++) {
    const base = vec.idx[k]! * C;
    const x = vec.val[k]!;
    for (let c = 0; c < C; c++) z[c]! += W[base + c]! * x;
  }
  return z;
}

/** Where the temperature is searched: a multiplicative grid wide enough for either kind's score scale. */
const TEMPERATURE_GRID = { from: 1e-4, to: 10, step: 1.1 };

export class SecondModel {
  private constructor(
    /** weights[f * C + c] */
    private readonly weights: Float32Array,
    private readonly classes: number,
    readonly temperature: number,
  ) {}

  /**
   * Trains on every example (generated variants too) and fits the temperature on out-of-fold
   * scores of the taught ones (`taught[n]`; folds are taken in turn, so no seed is needed).
   */
  static train(vecs: SparseVec[], ys: number[], ws: number[], taught: boolean[], C: number, F: number, used: Uint8Array, opts: SecondOptions): SecondModel {
    const alpha = opts.alpha ?? 1;
    const K = Math.max(2, opts.folds ?? 5);
    const held = vecs.map((_, n) => n).filter((n) => taught[n]);
    const fold = new Int32Array(vecs.length).fill(-1);
    held.forEach((n, at) => (fold[n] = at % K));
    const rows: ScoredRow[] = [];
    for (let j = 0; j < K; j++) {
      const inFold = (n: number) => fold[n] === j;
      const keep = vecs.map((_, n) => n).filter((n) => !inFold(n));
      const W = fitWeights(
        opts.kind,
        keep.map((n) => vecs[n]!),
        keep.map((n) => ys[n]!),
        keep.map((n) => ws[n]!),
        C,
        F,
        alpha,
        used,
      );
      for (const n of held) if (inFold(n)) rows.push({ z: scoresInto(W, C, vecs[n]!, new Float64Array(C)), y: ys[n]!, w: ws[n]! });
    }
    return new SecondModel(fitWeights(opts.kind, vecs, ys, ws, C, F, alpha, used), C, fitTemperature(rows, TEMPERATURE_GRID));
  }

  /** Calibrated probabilities of every label. */
  probabilities(vec: SparseVec): Float64Array {
    return softmax(scoresInto(this.weights, this.classes, vec, new Float64Array(this.classes)), this.temperature);
  }
}
