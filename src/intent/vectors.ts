// The vectors the intent classifier's models score: a turn's TF-IDF features as a sparse vector
// (classifier.ts builds them, ensemble.ts's second model reads the same ones), and the example
// memory, every training vector in an inverted index for the nearest-neighbour vote.
export type SparseVec = { idx: Int32Array; val: Float32Array };

/**
 * Every training vector, indexed by feature (an inverted index), so the cosine of a turn with each
 * example costs the length of the postings of the turn's features, not a pass over every example.
 */
export class ExampleMemory {
  private readonly scratch: Float32Array;

  constructor(
    private readonly postings: { ex: Int32Array; val: Float32Array }[],
    private readonly ys: Int32Array,
    private readonly classes: number,
  ) {
    this.scratch = new Float32Array(ys.length);
  }

  static build(vecs: SparseVec[], ys: number[], features: number, classes: number): ExampleMemory {
    const counts = new Int32Array(features);
    for (const v of vecs) for (const f of v.idx) counts[f]!++;
    const postings = Array.from(counts, (n) => ({ ex: new Int32Array(n), val: new Float32Array(n) }));
    const fill = new Int32Array(features);
    vecs.forEach((v, n) => {
      for (let k = 0; k < v.idx.length; k++) {
        const f = v.idx[k]!;
        const at = fill[f]!++;
        postings[f]!.ex[at] = n;
        postings[f]!.val[at] = v.val[k]!;
      }
    });
    return new ExampleMemory(postings, Int32Array.from(ys), classes);
  }

  /** The cosine of the nearest example of each label (vectors are L2-normed). */
  nearest(vec: SparseVec): Float64Array {
    const dots = this.scratch.fill(0);
    for (let k = 0; k < vec.idx.length; k++) {
      const { ex, val } = this.postings[vec.idx[k]!]!;
      const x = vec.val[k]!;
      for (let i = 0; i < ex.length; i++) dots[ex[i]!]! += x * val[i]!;
    }
    const best = new Float64Array(this.classes);
    for (let n = 0; n < dots.length; n++) if (dots[n]! > best[this.ys[n]!]!) best[this.ys[n]!] = dots[n]!;
    return best;
  }
}
