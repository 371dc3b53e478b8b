// The out-of-scope detector (optional, per pack: `out_of_scope.detector`): a small logistic
// regression that decides whether the local model's best intent is the answer (KNOWN) or the turn
// is to be turned down (OUT_OF_SCOPE / UNKNOWN). Fixed thresholds on one score trade in-scope
// accuracy for out-of-scope recall sharply; this model weighs several signals of the same turn
// instead: how sure the linear model is (top probability, lead over the second, entropy, the
// out-of-scope class's probability), how close the turn is to what the pack was taught (nearest
// examples of the best intent and of the out-of-scope class, whether the nearest example's intent
// is the best intent), how much of the turn the model knows at all (words, features, length) and
// what the deterministic matcher saw. It is trained at pack load (engine.ts) from out-of-fold
// predictions: held-out examples answered right are the positives; held-out out-of-scope examples,
// examples of intents held out whole and examples answered wrong are the negatives.
import type { TurnView } from './classifier.ts';

export interface DetectorOptions {
  /** Folds of the internal cross-validation at pack load (each trains one more model). */
  folds: number;
  /** Seed of the folds, the held-out intents and the noisy variants. */
  seed: number;
  /** Noisy variants (augment.ts `noisy`) of each held-out turn, scored as well (default 0). */
  noisy: number;
  /** Ridge penalty on the standardized weights (not the bias). */
  l2: number;
  /** Squares and pairwise products of the main signals as well (a curved boundary). */
  quadratic: boolean;
  /** Hinges max(0, x − k) at k = 0.25, 0.5, 0.75 of the main signals as well (a bent response per signal). */
  hinges: boolean;
  /** Held-out turns of known intents answered wrong train it as negatives (default); false: left out. */
  misclassified: boolean;
  /**
   * Out-of-scope examples fold by contiguous blocks instead of at random: authors write them in
   * topical runs, so a block held out is closer to foreign turns the class never saw.
   */
  blocks: boolean;
}

export const DEFAULT_DETECTOR: DetectorOptions = {
  folds: 5,
  seed: 1,
  noisy: 0,
  l2: 0.001,
  quadratic: false,
  hinges: false,
  misclassified: true,
  blocks: false,
};

/** What the detector reads of a turn. */
export interface DetectorInput {
  view: TurnView;
  /** Index of the best intent (not the out-of-scope class) in `view.mixed`: the would-be answer. */
  candidate: number;
  /** Index of the out-of-scope class, or −1. */
  oos: number;
  /** The deterministic matcher's best score and intent (label index or −1) and out-of-scope words. */
  lexical: { score: number; candidate: number; oosHits: number };
}

export const FEATURES = [
  'top_probability',
  'margin',
  'entropy',
  'oos_probability',
  'similarity',
  'oos_similarity',
  'similarity_lead',
  'neighbour_agrees',
  'known_words',
  'known_features',
  'length',
  'lexical_score',
  'lexical_agrees',
  'oos_words',
] as const;

/** The meta-features of a turn (in the order of FEATURES, then the quadratic terms and hinges if asked). */
export function detectorFeatures(x: DetectorInput, shape: { quadratic?: boolean; hinges?: boolean } = {}): number[] {
  const { view, candidate, oos, lexical } = x;
  const C = view.mixed.length;
  const p1 = view.mixed[candidate]!;
  let p2 = 0;
  for (let c = 0; c < C; c++) if (c !== candidate && c !== oos && view.mixed[c]! > p2) p2 = view.mixed[c]!;
  let entropy = 0;
  for (const p of view.linear) if (p > 0) entropy -= p * Math.log(p);
  entropy /= Math.log(Math.max(2, C));
  const sims = view.similarity;
  const sim = sims ? sims[candidate]! : 0;
  let otherSim = 0;
  let nearest = -1;
  if (sims) {
    for (let c = 0; c < C; c++) {
      if (c === oos) continue;
      if (nearest < 0 || sims[c]! > sims[nearest]!) nearest = c;
      if (c !== candidate && sims[c]! > otherSim) otherSim = sims[c]!;
    }
  }
  const f = [
    p1,
    p1 - p2,
    entropy,
    oos >= 0 ? view.linear[oos]! : 0,
    sim,
    sims && oos >= 0 ? sims[oos]! : 0,
    sim - otherSim,
    nearest === candidate ? 1 : 0,
    view.knownWords / Math.max(1, view.words),
    view.knownFeatures / Math.max(1, view.features),
    Math.log1p(view.words),
    Math.min(lexical.score, 6) / 6,
    lexical.candidate === candidate ? 1 : 0,
    lexical.oosHits > 0 ? 1 : 0,
  ];
  const main = [f[0]!, f[1]!, f[3]!, f[4]!, f[6]!, f[9]!];
  if (shape.quadratic) for (let i = 0; i < main.length; i++) for (let j = i; j < main.length; j++) f.push(main[i]! * main[j]!);
  if (shape.hinges) for (const v of main) for (const k of [0.25, 0.5, 0.75]) f.push(Math.max(0, v - k));
  return f;
}

/** A logistic regression over standardized meta-features. */
export class AcceptDetector {
  constructor(
    private readonly mean: Float64Array,
    private readonly scale: Float64Array,
    private readonly weights: Float64Array,
    private readonly bias: number,
  ) {}

  /** The probability that the would-be answer is right and the turn in scope. */
  score(x: number[]): number {
    let z = this.bias;
    for (let i = 0; i < this.weights.length; i++) z += this.weights[i]! * ((x[i]! - this.mean[i]!) / this.scale[i]!);
    return 1 / (1 + Math.exp(-z));
  }

  /**
   * Weighted logistic regression by Newton's method (a handful of features: the Hessian is tiny,
   * and the result depends on the data alone, not on an order or a step).
   */
  static fit(xs: number[][], ys: number[], ws: number[], l2: number): AcceptDetector {
    const d = xs[0]?.length ?? 0;
    const total = ws.reduce((a, b) => a + b, 0) || 1;
    const mean = new Float64Array(d);
    const scale = new Float64Array(d);
    xs.forEach((x, n) => x.forEach((v, i) => (mean[i]! += (ws[n]! * v) / total)));
    xs.forEach((x, n) => x.forEach((v, i) => (scale[i]! += (ws[n]! * (v - mean[i]!) ** 2) / total)));
    for (let i = 0; i < d; i++) scale[i] = Math.sqrt(scale[i]!) || 1;
    const zs = xs.map((x) => [...x.map((v, i) => (v - mean[i]!) / scale[i]!), 1]);
    const D = d + 1;
    const theta = new Float64Array(D);
    for (let iter = 0; iter < 50; iter++) {
      const H = Array.from({ length: D }, () => new Float64Array(D));
      const g = new Float64Array(D);
      zs.forEach((z, n) => {
        let s = 0;
        for (let i = 0; i < D; i++) s += theta[i]! * z[i]!;
        const p = 1 / (1 + Math.exp(-s));
        const w = ws[n]! / total;
        const r = w * (p - ys[n]!);
        const h = w * p * (1 - p);
        for (let i = 0; i < D; i++) {
          g[i]! += r * z[i]!;
          for (let j = 0; j <= i; j++) H[i]![j]! += h * z[i]! * z[j]!;
        }
      });
      for (let i = 0; i < D; i++) for (let j = 0; j < i; j++) H[j]![i] = H[i]![j]!;
      for (let i = 0; i < d; i++) {
        g[i]! += l2 * theta[i]!;
        H[i]![i]! += l2;
      }
      H[d]![d]! += 1e-9;
      const step = solve(H, g);
      let moved = 0;
      for (let i = 0; i < D; i++) {
        theta[i]! -= step[i]!;
        moved = Math.max(moved, Math.abs(step[i]!));
      }
      if (moved < 1e-7) break;
    }
    return new AcceptDetector(mean, scale, theta.slice(0, d), theta[d]!);
  }
}

/** Solves A x = b by Gaussian elimination with partial pivoting (A is small and positive definite). */
function solve(A: Float64Array[], b: Float64Array): Float64Array {
  const n = b.length;
  const M = A.map((row, i) => [...row, b[i]!]);
  for (let c = 0; c < n; c++) {
    let pivot = c;
    for (let r = c + 1; r < n; r++) if (Math.abs(M[r]![c]!) > Math.abs(M[pivot]![c]!)) pivot = r;
    [M[c], M[pivot]] = [M[pivot]!, M[c]!];
    const p = M[c]![c]! || 1e-12;
    for (let r = c + 1; r < n; r++) {
      const k = M[r]![c]! / p;
      if (k === 0) continue;
      for (let j = c; j <= n; j++) M[r]![j]! -= k * M[c]![j]!;
    }
  }
  const x = new Float64Array(n);
  for (let r = n - 1; r >= 0; r--) {
    let s = M[r]![n]!;
    for (let j = r + 1; j < n; j++) s -= M[r]![j]! * x[j]!;
    x[r] = s / (M[r]![r]! || 1e-12);
  }
  return x;
}
