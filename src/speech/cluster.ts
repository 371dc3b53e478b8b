// Agglomerative clustering with cosine distance and average linkage (UPGMA), by the
// nearest-neighbour chain algorithm: O(n²) time and one n×n distance matrix, so a few thousand
// windows cluster in well under a second.

/** One merge of the dendrogram: the clusters holding items `a` and `b` join at `height`. */
export interface Merge {
  a: number;
  b: number;
  height: number;
}

/** The dendrogram of `vectors` under cosine distance, merges sorted by height. */
export function averageLinkage(vectors: readonly Float32Array[]): Merge[] {
  const n = vectors.length;
  const unit = vectors.map(unitVector);
  const distance = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      let dot = 0;
      const u = unit[i]!;
      const v = unit[j]!;
      for (let d = 0; d < u.length; d++) dot += u[d]! * v[d]!;
      distance[i * n + j] = distance[j * n + i] = 1 - dot;
    }
  }
  const size = new Float64Array(n).fill(1);
  const active = new Uint8Array(n).fill(1);
  const merges: Merge[] = [];
  const chain: number[] = [];
  for (let remaining = n; remaining > 1; remaining--) {
    if (chain.length === 0) chain.push(active.indexOf(1));
    let a: number;
    let b: number;
    for (;;) {
      a = chain[chain.length - 1]!;
      const previous = chain.length > 1 ? chain[chain.length - 2]! : -1;
      b = previous;
      let best = previous >= 0 ? distance[a * n + previous]! : Infinity;
      for (let c = 0; c < n; c++) {
        if (c === a || active[c] === 0) continue;
        if (distance[a * n + c]! < best) {
          best = distance[a * n + c]!;
          b = c;
        }
      }
      if (b === previous) break;
      chain.push(b);
    }
    chain.length -= 2;
    merges.push({ a, b, height: distance[a * n + b]! });
    // Lance–Williams update for average linkage: the merged cluster lives on at index a.
    for (let c = 0; c < n; c++) {
      if (active[c] === 0 || c === a || c === b) continue;
      const merged = (size[a]! * distance[a * n + c]! + size[b]! * distance[b * n + c]!) / (size[a]! + size[b]!);
      distance[a * n + c] = distance[c * n + a] = merged;
    }
    size[a]! += size[b]!;
    active[b] = 0;
  }
  return merges.sort((x, y) => x.height - y.height);
}

export interface Cut {
  /** Exactly this many clusters (or the number of items, if fewer). */
  clusters?: number;
  /** Otherwise: merge while the linkage distance is at most this... */
  threshold?: number;
  /** ...and then on until no more than this many clusters remain. */
  maxClusters?: number;
}

/** Cluster index per item (0-based, in no particular order) after cutting the dendrogram. */
export function cutTree(n: number, merges: readonly Merge[], cut: Cut): Int32Array {
  const parent = Int32Array.from({ length: n }, (_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  let count = n;
  for (const merge of merges) {
    const enough =
      cut.clusters !== undefined
        ? count <= cut.clusters
        : merge.height > (cut.threshold ?? Infinity) && count <= (cut.maxClusters ?? Infinity);
    if (enough) break;
    parent[root(merge.b)] = root(merge.a);
    count--;
  }
  const ids = new Map<number, number>();
  const labels = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const r = root(i);
    if (!ids.has(r)) ids.set(r, ids.size);
    labels[i] = ids.get(r)!;
  }
  return labels;
}

function unitVector(v: Float32Array): Float32Array {
  let norm = 0;
  for (const x of v) norm += x * x;
  norm = Math.sqrt(norm) || 1;
  return v.map((x) => x / norm);
}
