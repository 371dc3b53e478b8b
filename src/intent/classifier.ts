// The local model: a multinomial logistic regression over TF-IDF features (sublinear tf, L2-normed)
// of word unigrams, word bigrams (the first word also paired with a start mark) and character
// 1–5-grams of each canonical token with its word boundaries, trained at pack load by averaged
// SGD (seeded, so a pack always trains to the same weights). Sparse prediction costs about
// nnz × classes multiply-adds (tens of microseconds). On packs with few examples per label it also
// keeps every training example and mixes in a nearest-neighbour vote (cosine over the same TF-IDF
// vectors: vectors.ts's example memory), which learns from a handful of examples what the linear model cannot. Its softmax is sharpened or softened by a
// temperature, so its probabilities can serve as calibrated confidence (the evaluation fits the
// temperature on a validation split; packs use the default). Optionally a second model of another
// family (ensemble.ts: complement naive Bayes or nearest centroid) is trained on the same vectors
// and its calibrated probabilities mixed with the linear model's (`setEnsembleWeight`).
import { fitTemperature, softmax } from './calibration.ts';
import { SecondModel, type SecondOptions } from './ensemble.ts';
import { ExampleMemory, type SparseVec } from './vectors.ts';

export interface Example {
  tokens: string[];
  label: string;
  /**
   * A generated variant (augment.ts): the linear model learns from it, the example memory does not
   * keep it, so nearest-example similarities stay similarities to what the pack was taught.
   */
  synthetic?: boolean;
}

export interface TrainOptions {
  epochs?: number;
  /** The constant SGD step (the averaged weights are returned). */
  learningRate?: number;
  seed?: number;
  /** Features seen in fewer training examples are dropped (default 2 from 5,000 examples, else 1). */
  minDf?: number;
  minCharN?: number;
  maxCharN?: number;
  /**
   * Keep every training example for nearest-neighbour scores (default: when the median label has
   * fewer than 40 examples, where a linear model alone has too little to learn from; the median,
   * so one big out-of-scope class does not count).
   */
  memory?: boolean;
  /**
   * Weigh each example by n / (labels × its label's count), so every label carries the same total
   * weight: a big out-of-scope class then does not drown intents of ten examples (default off).
   */
  balance?: boolean;
  /** Also train a second model of another family on the same vectors (ensemble.ts; default none). */
  second?: SecondOptions;
}

/** What the out-of-scope detector (detector.ts) reads of a turn besides the ranking. */
export interface TurnView {
  vec: SparseVec;
  /** The linear model's calibrated probabilities of every label, mixed with the second model's if any (no neighbour vote). */
  linear: Float64Array;
  /** The probabilities the ranking uses (the linear ones mixed with the neighbour vote, if any). */
  mixed: Float64Array;
  /** Each label's nearest-example cosine (null without an example memory). */
  similarity: Float64Array | null;
  /** The turn's words and how many of them (as word features) the model knows. */
  words: number;
  knownWords: number;
  /** The turn's features (words, bigrams, character n-grams) and how many the model knows. */
  features: number;
  knownFeatures: number;
}

export interface Scored {
  label: string;
  prob: number;
  /** Cosine similarity of the nearest training example of this label (with an example memory). */
  similarity?: number;
}

/** How the example memory's votes join the linear model's probabilities. */
export interface NeighbourMix {
  /** Share of the nearest-neighbour distribution in the mixed probabilities (default 0: the linear model alone). */
  weight: number;
  /** Softmax temperature over the per-label nearest similarities. */
  temperature: number;
}

/** Biases move slower than weights: a class prior should not swing with every example. */
const BIAS_RATE = 0.1;

export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Fisher–Yates in place, driven by `rand` (seeded: the same order every run). */
export function shuffle<T>(xs: T[], rand: () => number): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

export function featureStrings(tokens: string[], minN = 1, maxN = 5): string[] {
  const out: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    out.push(`w:${t}`);
    // How a turn starts ("how much", "can you") says a lot about what it asks.
    if (i === 0) out.push(`b:^_${t}`);
    if (i + 1 < tokens.length) out.push(`b:${t}_${tokens[i + 1]}`);
    const padded = `<${t}>`;
    for (let n = minN; n <= maxN; n++) {
      if (padded.length < n) break;
      for (let s = 0; s + n <= padded.length; s++) out.push(`c:${padded.slice(s, s + n)}`);
    }
  }
  return out;
}

export class NgramClassifier {
  private temperature = 1;
  private memory: ExampleMemory | null = null;
  private mix: NeighbourMix = { weight: 0, temperature: 0.05 };
  private second: SecondModel | null = null;
  private secondWeight = 0;

  private constructor(
    readonly labels: string[],
    private readonly vocab: Map<string, number>,
    private readonly idf: Float32Array,
    /** weights[f * C + c] */
    private readonly weights: Float32Array,
    private readonly bias: Float32Array,
    private readonly minN: number,
    private readonly maxN: number,
  ) {}

  static train(examples: Example[], opts: TrainOptions = {}): NgramClassifier {
    const minN = opts.minCharN ?? 1;
    const maxN = opts.maxCharN ?? 5;
    const labels = [...new Set(examples.map((e) => e.label))].sort();
    const labelIdx = new Map(labels.map((l, i) => [l, i]));
    const C = labels.length;
    const N = examples.length;
    const minDf = opts.minDf ?? (N >= 5000 ? 2 : 1);
    const featureLists = examples.map((e) => featureStrings(e.tokens, minN, maxN));
    const df = new Map<string, number>();
    for (const list of featureLists) for (const f of new Set(list)) df.set(f, (df.get(f) ?? 0) + 1);
    // A feature of one example only cannot generalize; on big packs dropping those halves the model.
    const vocab = new Map<string, number>();
    const idfs: number[] = [];
    for (const [f, n] of df) {
      if (n < minDf) continue;
      vocab.set(f, vocab.size);
      idfs.push(Math.log((1 + N) / (1 + n)) + 1);
    }
    const model = new NgramClassifier(labels, vocab, Float32Array.from(idfs), new Float32Array(vocab.size * C), new Float32Array(C), minN, maxN);
    const vecs = featureLists.map((list) => model.vectorizeFeatures(list));
    const ys = examples.map((e) => labelIdx.get(e.label)!);
    const counts = labels.map((_, c) => ys.filter((y) => y === c).length);
    const weights = opts.balance ? ys.map((y) => N / (C * counts[y]!)) : ys.map(() => 1);
    model.fit(vecs, ys, weights, opts);
    if (opts.second) {
      const used = new Uint8Array(vocab.size);
      for (const [f, id] of vocab) used[id] = opts.second.kind !== 'char_nb' || f.startsWith('c:') ? 1 : 0;
      model.second = SecondModel.train(
        vecs,
        ys,
        weights,
        examples.map((e) => !e.synthetic),
        C,
        vocab.size,
        used,
        opts.second,
      );
    }
    const taught = examples.map((e, n) => (e.synthetic ? -1 : n)).filter((n) => n >= 0);
    const median = labels.map((_, c) => taught.filter((n) => ys[n] === c).length).sort((a, b) => a - b)[Math.floor(C / 2)]!;
    if (opts.memory ?? median < 40)
      model.memory = ExampleMemory.build(
        taught.map((n) => vecs[n]!),
        taught.map((n) => ys[n]!),
        vocab.size,
        C,
      );
    return model;
  }

  private weigh(counts: Map<number, number>): SparseVec {
    const idx = new Int32Array(counts.size);
    const val = new Float32Array(counts.size);
    let k = 0;
    let norm = 0;
    for (const [id, tf] of counts) {
      const v = (1 + Math.log(tf)) * this.idf[id]!;
      idx[k] = id;
      val[k] = v;
      norm += v * v;
      k++;
    }
    const inv = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let i = 0; i < val.length; i++) val[i]! *= inv;
    return { idx, val };
  }

  vectorize(tokens: string[]): SparseVec {
    return this.vectorizeFeatures(featureStrings(tokens, this.minN, this.maxN));
  }

  private vectorizeFeatures(features: string[]): SparseVec {
    const counts = new Map<number, number>();
    for (const f of features) {
      const id = this.vocab.get(f);
      if (id !== undefined) counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return this.weigh(counts);
  }

  /**
   * Averaged SGD on the softmax loss: a constant step, and the model returned is the mean of the
   * weights over every step (Polyak averaging), which converges in a few epochs where a decaying
   * step needed tens, and regularizes without an L2 term. The mean is kept lazily: each update of
   * `d` at step t also adds t·d to an accumulator, and mean = w − acc / t at the end.
   * Gradients under 1e-3 (classes the example says nothing about) are skipped: that is most of them
   * after the first epoch, which makes an epoch about one forward pass.
   */
  private fit(vecs: SparseVec[], ys: number[], weights: number[], opts: TrainOptions): void {
    const C = this.labels.length;
    const W = this.weights;
    const b = this.bias;
    const acc = new Float32Array(W.length);
    const accBias = new Float64Array(C);
    const epochs = opts.epochs ?? Math.min(30, Math.max(4, Math.ceil(60_000 / Math.max(1, vecs.length))));
    const lr = opts.learningRate ?? 5;
    const rand = mulberry32(opts.seed ?? 42);
    const order = vecs.map((_, i) => i);
    const z = new Float64Array(C);
    let t = 1;
    for (let epoch = 0; epoch < epochs; epoch++) {
      shuffle(order, rand);
      for (const n of order) {
        const vec = vecs[n]!;
        const { idx, val } = vec;
        this.logitsInto(vec, z);
        let max = -Infinity;
        for (let c = 0; c < C; c++) if (z[c]! > max) max = z[c]!;
        let sum = 0;
        for (let c = 0; c < C; c++) {
          z[c] = Math.exp(z[c]! - max);
          sum += z[c]!;
        }
        const y = ys[n]!;
        for (let c = 0; c < C; c++) {
          const g = z[c]! / sum - (c === y ? 1 : 0);
          if (g > -1e-3 && g < 1e-3) continue;
          const step = lr * weights[n]! * g;
          b[c]! -= step * BIAS_RATE;
          accBias[c]! -= t * step * BIAS_RATE;
          for (let k = 0; k < idx.length; k++) {
            const i = idx[k]! * C + c;
            const d = step * val[k]!;
            W[i]! -= d;
            acc[i]! -= t * d;
          }
        }
        t++;
      }
    }
    for (let i = 0; i < W.length; i++) W[i] = W[i]! - acc[i]! / t;
    for (let c = 0; c < C; c++) b[c] = b[c]! - accBias[c]! / t;
  }

  /** Raw scores (logits) of every label for a vector. */
  logits(vec: SparseVec): Float64Array {
    return this.logitsInto(vec, new Float64Array(this.labels.length));
  }

  private logitsInto(vec: SparseVec, z: Float64Array): Float64Array {
    const C = this.labels.length;
    for (let c = 0; c < C; c++) z[c] = this.bias[c]!;
    const W = this.weights;
    for (let k = 0; k < vec.idx.length; k++) {
      const base = vec.idx[k]! * C;
      const x = vec.val[k]!;
      for (let c = 0; c < C; c++) z[c]! += W[base + c]! * x;
    }
    return z;
  }

  setTemperature(t: number): void {
    this.temperature = t;
  }

  getTemperature(): number {
    return this.temperature;
  }

  hasMemory(): boolean {
    return this.memory !== null;
  }

  hasSecond(): boolean {
    return this.second !== null;
  }

  /** The second model's share in the probabilities (0: the linear model alone; needs `second` at training). */
  setEnsembleWeight(weight: number): void {
    this.secondWeight = weight;
  }

  getEnsembleWeight(): number {
    return this.second ? this.secondWeight : 0;
  }

  /** The linear model's calibrated probabilities, mixed with the second model's when it has a share. */
  probabilities(vec: SparseVec): Float64Array {
    return this.withSecond(softmax(this.logits(vec), this.temperature), vec);
  }

  /** `p` (the linear model's) mixed with the second model's probabilities when it has a share (a new array; `p` itself otherwise). */
  private withSecond(p: Float64Array, vec: SparseVec): Float64Array {
    const w = this.secondWeight;
    if (!this.second || w === 0) return p;
    const q = this.second.probabilities(vec);
    const out = new Float64Array(p.length);
    for (let c = 0; c < p.length; c++) out[c] = (1 - w) * p[c]! + w * q[c]!;
    return out;
  }

  setNeighbourMix(mix: NeighbourMix): void {
    this.mix = mix;
  }

  getNeighbourMix(): NeighbourMix {
    return this.mix;
  }

  /**
   * Everything the model says about a turn, for the out-of-scope detector: its probabilities
   * (linear and mixed), every label's nearest-example cosine and how much of the turn it knows.
   */
  view(tokens: string[]): TurnView {
    const features = featureStrings(tokens, this.minN, this.maxN);
    let knownFeatures = 0;
    for (const f of features) if (this.vocab.has(f)) knownFeatures++;
    let knownWords = 0;
    for (const t of tokens) if (this.vocab.has(`w:${t}`)) knownWords++;
    const vec = this.vectorizeFeatures(features);
    const linear = this.probabilities(vec);
    const similarity = this.memory?.nearest(vec) ?? null;
    return { vec, linear, mixed: this.mixWith(linear, similarity), similarity, words: tokens.length, knownWords, features: features.length, knownFeatures };
  }

  private mixWith(p: Float64Array, sims: Float64Array | null | undefined): Float64Array {
    if (!sims || this.mix.weight === 0) return p;
    const q = softmax(sims, this.mix.temperature);
    const out = new Float64Array(p.length);
    for (let c = 0; c < p.length; c++) out[c] = (1 - this.mix.weight) * p[c]! + this.mix.weight * q[c]!;
    return out;
  }

  /** The top `k` of a probability vector, best first. */
  top(p: Float64Array, k: number, sims?: Float64Array | null): Scored[] {
    const top: Scored[] = [];
    for (let c = 0; c < p.length; c++) {
      const prob = p[c]!;
      if (top.length < k || prob > top[top.length - 1]!.prob) {
        top.push({ label: this.labels[c]!, prob, ...(sims ? { similarity: sims[c]! } : {}) });
        top.sort((a, b2) => b2.prob - a.prob);
        if (top.length > k) top.pop();
      }
    }
    return top;
  }

  /** Calibrated probabilities, best first, the top `k`. */
  predict(tokens: string[], k = 5): Scored[] {
    return this.rank(this.vectorize(tokens), k, true);
  }

  /**
   * The top `k` labels of a vector: the linear model's calibrated probabilities (with the second
   * model's, when it has a share), mixed with a
   * softmax over each label's nearest-example similarity when the model keeps an example memory.
   * The similarities cost a pass over the memory's postings: computed only for the mix or when asked.
   */
  rank(vec: SparseVec, k = 5, withSimilarity = false): Scored[] {
    return this.rankWith(vec, k, this.nearestFor(vec, withSimilarity));
  }

  /** Each label's nearest-example cosine when asked for or needed by the neighbour vote (null: neither, or no memory). */
  nearestFor(vec: SparseVec, withSimilarity: boolean): Float64Array | null {
    return withSimilarity || this.mix.weight > 0 ? (this.memory?.nearest(vec) ?? null) : null;
  }

  /** `rank` with the similarities already computed (`nearestFor`). */
  rankWith(vec: SparseVec, k: number, sims: Float64Array | null): Scored[] {
    return this.top(this.mixWith(this.probabilities(vec), sims), k, sims);
  }

  /**
   * `rankWith`, and every label's probability as the model without its second model ranks them
   * (`linear`: the linear model's calibrated probabilities mixed with the neighbour vote), both
   * from one pass of the linear model.
   */
  rankWithLinear(vec: SparseVec, k: number, sims: Float64Array | null): { ranked: Scored[]; linear: Float64Array } {
    const p = softmax(this.logits(vec), this.temperature);
    return { ranked: this.top(this.mixWith(this.withSecond(p, vec), sims), k, sims), linear: this.mixWith(p, sims) };
  }

  /** Fits the temperature minimizing the negative log-likelihood of labelled examples (grid search). */
  calibrate(examples: Example[]): number {
    const data = examples
      .filter((e) => this.labels.includes(e.label))
      .map((e) => ({ z: this.logits(this.vectorize(e.tokens)), y: this.labels.indexOf(e.label) }));
    if (data.length === 0) return this.temperature;
    this.temperature = fitTemperature(data, { from: 0.05, to: 3, step: 1.15 });
    return this.temperature;
  }
}
