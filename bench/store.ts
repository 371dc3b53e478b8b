// Embedded store throughput on a temp dir (real fsyncs: every figure includes durable commits):
//   1. single awaited inserts vs. 1000 concurrent inserts: the ratio is what group commit buys;
//   2. 1000 concurrent guarded debits on one document (the wallet pattern);
//   3. point reads by _id;
//   4. over 100k documents: the latest 20 of one org through an index, and the same query without one
//      (bounded top-k over a scan).
// Prints figures; no pass/fail (timed assertions flake on shared machines).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../src/store/embedded/store.ts';

function report(label: string, ops: number, ms: number): number {
  const rate = (ops / ms) * 1000;
  console.log(`${label.padEnd(58)} ${Math.round(rate).toLocaleString('en').padStart(10)} ops/s  (${(ms / ops).toFixed(3)} ms/op)`);
  return rate;
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

const dir = await mkdtemp(join(tmpdir(), 'gateway-store-bench-'));
const store = await openEmbeddedStore({ dir });
try {
  const writes = store.collection('writes');
  const SINGLE = 300;
  const single = report(
    `insertOne, one at a time (${SINGLE}, each awaited)`,
    SINGLE,
    await timed(async () => {
      for (let i = 0; i < SINGLE; i++) await writes.insertOne({ _id: `s${i}`, n: i, at: new Date() });
    }),
  );
  const CONCURRENT = 1000;
  const concurrent = report(
    `insertOne, ${CONCURRENT} concurrent`,
    CONCURRENT,
    await timed(() => Promise.all(Array.from({ length: CONCURRENT }, (_, i) => writes.insertOne({ _id: `c${i}`, n: i, at: new Date() })))),
  );
  console.log(`${'group commit ratio (concurrent / single)'.padEnd(58)} ${(concurrent / single).toFixed(1).padStart(10)} x`);

  const wallets = store.collection('wallets');
  await wallets.insertOne({ _id: 'w', balance: 1e9 });
  const debit = () => wallets.updateOne({ _id: 'w', balance: { $gte: 5 } }, { $inc: { balance: -5 } });
  await Promise.all(Array.from({ length: 200 }, debit)); // warm-up: JIT and mingo's operator tables
  report(`guarded $inc debit on one document, ${CONCURRENT} concurrent`, CONCURRENT, await timed(() => Promise.all(Array.from({ length: CONCURRENT }, debit))));

  const READS = 100_000;
  report(
    `findOne by _id (${READS.toLocaleString('en')})`,
    READS,
    await timed(async () => {
      for (let i = 0; i < READS; i++) await writes.findOne({ _id: `c${i % CONCURRENT}` });
    }),
  );

  const usage = store.collection('usage');
  const unindexed = store.collection('usage_unindexed');
  const ROWS = 100_000;
  const T0 = Date.UTC(2026, 0, 1);
  const fillMs = await timed(async () => {
    for (let start = 0; start < ROWS; start += 1000) {
      const batch = [];
      for (let i = start; i < start + 1000; i++) {
        const row = { _id: i, org: `o${i % 50}`, at: new Date(T0 + ((i * 7919) % ROWS) * 1000), tokens: i % 997 };
        batch.push(usage.insertOne(row), unindexed.insertOne(row));
      }
      await Promise.all(batch);
    }
  });
  report(`fill: ${(2 * ROWS).toLocaleString('en')} inserts in batches of 2000`, 2 * ROWS, fillMs);
  const indexMs = await timed(() => usage.createIndex({ keys: { org: 1, at: -1 } }));
  console.log(`${`createIndex {org: 1, at: -1} over ${ROWS.toLocaleString('en')} documents`.padEnd(58)} ${indexMs.toFixed(0).padStart(10)} ms`);
  const QUERIES = 2000;
  report(
    `latest 20 of one org via index (${ROWS.toLocaleString('en')} docs, 50 orgs)`,
    QUERIES,
    await timed(async () => {
      for (let i = 0; i < QUERIES; i++) await usage.find({ org: `o${i % 50}` }, { sort: { at: -1 }, limit: 20 });
    }),
  );
  const SCANS = 10;
  report(
    `same query without an index (scan + top-k)`,
    SCANS,
    await timed(async () => {
      for (let i = 0; i < SCANS; i++) await unindexed.find({ org: `o${i % 50}` }, { sort: { at: -1 }, limit: 20 });
    }),
  );
} finally {
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
