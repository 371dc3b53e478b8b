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
    const enough = cut.clusters !== undefined ? count <= cut.clusters : merge.height > (cut.threshold ?? Infinity) && count <= (cut.maxClusters ?? Infinity);
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

/**
 * Cluster index per item, treating clusters of fewer than `minSize` items as outliers: with
 * `clusters: k`, the dendrogram is split top-down until k clusters of at least `minSize` items
 * exist; with a threshold, only the clusters of at least `minSize` items count towards
 * `maxClusters`. Outliers then join the nearest kept cluster (cosine to its centroid).
 */
export function cutWithoutOutliers(vectors: readonly Float32Array[], merges: readonly Merge[], cut: Cut, minSize: number): Int32Array {
  const n = vectors.length;
  if (n === 0) return new Int32Array(0);
  let labels: Int32Array | undefined;
  if (cut.clusters === undefined) {
    labels = cutTree(n, merges, { threshold: cut.threshold });
    const kept = bigClusters(labels, minSize).length;
    if (kept === 0) return new Int32Array(n);
    if (kept > (cut.maxClusters ?? Infinity)) return cutWithoutOutliers(vectors, merges, { clusters: cut.maxClusters }, minSize);
  } else {
    for (let m = 1; m <= n && !labels; m++) {
      const level = cutTree(n, merges, { clusters: m });
      if (bigClusters(level, minSize).length >= cut.clusters) labels = level;
    }
    labels ??= cutTree(n, merges, { clusters: cut.clusters });
  }
  return foldOutliers(vectors, labels, bigClusters(labels, minSize));
}

function bigClusters(labels: Int32Array, minSize: number): number[] {
  const sizes = new Map<number, number>();
  for (const l of labels) sizes.set(l, (sizes.get(l) ?? 0) + 1);
  return [...sizes].filter(([, size]) => size >= minSize).map(([label]) => label);
}

function foldOutliers(vectors: readonly Float32Array[], labels: Int32Array, kept: readonly number[]): Int32Array {
  if (kept.length === 0) return labels;
  const dims = vectors[0]!.length;
  const centroids = new Map(kept.map((label) => [label, new Float32Array(dims)]));
  vectors.forEach((v, i) => {
    const centroid = centroids.get(labels[i]!);
    if (!centroid) return;
    const u = unitVector(v);
    for (let d = 0; d < dims; d++) centroid[d]! += u[d]!;
  });
  const units = new Map([...centroids].map(([label, c]) => [label, unitVector(c)]));
  return labels.map((label, i) => {
    if (units.has(label)) return label;
    const u = unitVector(vectors[i]!);
    let best = kept[0]!;
    let bestDot = -Infinity;
    for (const [candidate, c] of units) {
      let dot = 0;
      for (let d = 0; d < dims; d++) dot += u[d]! * c[d]!;
      if (dot > bestDot) {
        bestDot = dot;
        best = candidate;
      }
    }
    return best;
  });
}
