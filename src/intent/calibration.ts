// Softmax with a temperature, and the temperature that calibrates a model's scores: shared by the
// linear model (classifier.ts) and the optional second model (ensemble.ts).

export function softmax(z: Float64Array, temperature: number): Float64Array {
  let max = -Infinity;
  for (const v of z) if (v > max) max = v;
  const p = new Float64Array(z.length);
  let sum = 0;
  for (let c = 0; c < z.length; c++) {
    p[c] = Math.exp((z[c]! - max) / temperature);
    sum += p[c]!;
  }
  for (let c = 0; c < z.length; c++) p[c]! /= sum;
  return p;
}

/** Labelled scores: `z` a row of scores, `y` the true label's index, `w` its weight (default 1). */
export interface ScoredRow {
  z: Float64Array;
  y: number;
  w?: number;
}

/**
 * The temperature minimizing the (weighted) negative log-likelihood of `rows`, searched over the
 * multiplicative grid `from`, `from·step`, ... up to `to`.
 */
export function fitTemperature(rows: ScoredRow[], grid: { from: number; to: number; step: number }): number {
  let best = { t: 1, nll: Infinity };
  for (let t = grid.from; t <= grid.to; t *= grid.step) {
    let nll = 0;
    for (const { z, y, w = 1 } of rows) {
      let max = -Infinity;
      for (const v of z) if (v > max) max = v;
      let sum = 0;
      for (const v of z) sum += Math.exp((v - max) / t);
      nll -= w * ((z[y]! - max) / t - Math.log(sum));
    }
    if (nll < best.nll) best = { t, nll };
  }
  return best.t;
}
