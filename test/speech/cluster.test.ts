import { test } from 'node:test';
import assert from 'node:assert/strict';
import { averageLinkage, cutTree, cutWithoutOutliers } from '../../src/speech/cluster.ts';

// Three tight bundles of directions (cosine distance ≈ 0 inside, ≈ 1 between) and one stray vector.
const bundle = (axis: number, count: number) =>
  Array.from({ length: count }, (_, i) => Float32Array.from([0, 1, 2], (d) => (d === axis ? 1 : 0.02 * ((i + d) % 3))));
const points = [...bundle(0, 4), ...bundle(1, 3), ...bundle(2, 5)];

test('average linkage merges within bundles first, then between them', () => {
  const merges = averageLinkage(points);
  assert.equal(merges.length, points.length - 1);
  assert.ok(merges.every((m, i) => i === 0 || m.height >= merges[i - 1]!.height));
  assert.ok(merges.slice(0, points.length - 3).every((m) => m.height < 0.01));
  assert.ok(merges.slice(points.length - 3).every((m) => m.height > 0.9));
});

test('a cut by count or by threshold recovers the bundles', () => {
  const merges = averageLinkage(points);
  const byCount = cutTree(points.length, merges, { clusters: 3 });
  const byThreshold = cutTree(points.length, merges, { threshold: 0.5 });
  const groups = (labels: Int32Array) => [
    new Set(labels.slice(0, 4)).size,
    new Set(labels.slice(4, 7)).size,
    new Set(labels.slice(7)).size,
    new Set(labels).size,
  ];
  assert.deepEqual(groups(byCount), [1, 1, 1, 3]);
  assert.deepEqual(groups(byThreshold), [1, 1, 1, 3]);
  assert.equal(new Set(cutTree(points.length, merges, { threshold: 0.5, maxClusters: 2 })).size, 2);
  assert.equal(new Set(cutTree(points.length, merges, { clusters: 1 })).size, 1);
});

test('a stray vector does not take a speaker slot: it joins the nearest kept cluster', () => {
  // Far from both bundles (distance ≈ 1.96 and ≈ 1.29), further than they are from each other (≈ 1).
  const stray = Float32Array.from([-1, 0, -0.3]);
  const withStray = [...bundle(0, 4), ...bundle(2, 5), stray];
  const merges = averageLinkage(withStray);
  const labels = cutWithoutOutliers(withStray, merges, { clusters: 2 }, 3);
  assert.equal(new Set(labels.slice(0, 4)).size, 1);
  assert.equal(new Set(labels.slice(4, 9)).size, 1);
  assert.notEqual(labels[0], labels[4]);
  assert.equal(labels[9], labels[4]);
  // Cutting at two clusters without this spends one on the stray and merges the bundles.
  const plain = cutTree(withStray.length, merges, { clusters: 2 });
  assert.equal(plain[0], plain[4]);
  assert.notEqual(plain[9], plain[0]);
});
