import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import { InvalidKeyError, isDuplicateKeyError, type Store } from '../../src/store/port.ts';
import { nodeArgsFor } from '../build.ts';
import { runStoreContract } from './contract.ts';
import { payloadFor, sha256 } from './fixtures/payload.ts';

const FIXTURES = join(import.meta.dirname, 'fixtures');

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'gateway-store-'));
}

runStoreContract('embedded', async () => {
  const dir = await tempDir();
  const store = await openEmbeddedStore({ dir, ttlSweepMs: 50 });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

/** Opens a store in a fresh directory, runs `fn`, and always closes and removes it. */
async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await tempDir();
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function withStore(dir: string, fn: (store: Store) => Promise<void>): Promise<void> {
  const store = await openEmbeddedStore({ dir });
  try {
    await fn(store);
  } finally {
    await store.close();
  }
}

describe('embedded store', () => {
  it('keeps documents and index definitions across close and reopen', async () => {
    await withDir(async (dir) => {
      await withStore(dir, async (store) => {
        const keys = store.collection('keys');
        await keys.createIndex({ keys: { hash: 1 }, unique: true });
        await keys.createIndex({ keys: { org: 1, createdAt: -1 } });
        await keys.insertOne({ _id: 'k1', hash: 'h1', org: 'o', createdAt: new Date(1) });
        await keys.insertOne({ _id: 'k2', hash: 'h2', org: 'o', createdAt: new Date(2) });
      });
      await withStore(dir, async (store) => {
        const keys = store.collection('keys');
        assert.deepEqual(await keys.findOne({ _id: 'k1' }), { _id: 'k1', hash: 'h1', org: 'o', createdAt: new Date(1) });
        // The unique index came back from disk: it still refuses a duplicate...
        await assert.rejects(keys.insertOne({ _id: 'k3', hash: 'h1', org: 'o', createdAt: new Date(3) }), isDuplicateKeyError);
        // ...and re-declaring it at startup is a no-op, not a conflict.
        assert.equal(await keys.createIndex({ keys: { hash: 1 }, unique: true }), 'hash_1');
        const latest = await keys.find({ org: 'o' }, { sort: { createdAt: -1 }, limit: 1 });
        assert.deepEqual(
          latest.map((d) => d._id),
          ['k2'],
        );
      });
    });
  });

  it('maintains an index created by another store instance on the same directory', async () => {
    await withDir((dir) =>
      withStore(dir, (first) =>
        withStore(dir, async (second) => {
          const a = first.collection('shared');
          const b = second.collection('shared');
          await b.insertOne({ _id: 0, email: 'z@x', org: 'o' }); // b's registry is loaded, without indexes
          await a.createIndex({ keys: { email: 1 }, unique: true });
          await assert.rejects(b.insertOne({ _id: 1, email: 'z@x', org: 'o' }), isDuplicateKeyError);
          await b.insertOne({ _id: 2, email: 'y@x', org: 'o' });
          assert.deepEqual(
            (await a.find({ email: 'y@x' })).map((d) => d._id),
            [2],
          );
          // b adding its own index keeps a's in the stored definitions.
          await b.createIndex({ keys: { org: 1 } });
          await assert.rejects(a.insertOne({ _id: 3, email: 'y@x', org: 'p' }), isDuplicateKeyError);
          await a.insertOne({ _id: 4, email: 'w@x', org: 'p' });
          assert.deepEqual(
            (await b.find({ org: 'p' })).map((d) => d._id),
            [4],
          );
          // Lazy point writes (decided outside any transaction) see the other's indexes too.
          const lazy = { writeConcern: { j: false } } as const;
          await assert.rejects(b.updateOne({ _id: 2 }, { $set: { email: 'w@x' } }, lazy), isDuplicateKeyError);
          await b.updateOne({ _id: 2 }, { $set: { org: 'q' } }, lazy);
          assert.deepEqual(
            (await a.find({ org: 'q' })).map((d) => d._id),
            [2],
          );
          const c = second.collection('shared2');
          await c.insertOne({ _id: 1, email: 'a@x' });
          await c.updateOne({ _id: 1 }, { $set: { n: 1 } }, lazy); // c's registry is loaded, without indexes
          await first.collection('shared2').createIndex({ keys: { email: 1 }, unique: true });
          await c.insertOne({ _id: 2, email: 'b@x' });
          await assert.rejects(c.updateOne({ _id: 2 }, { $set: { email: 'a@x' } }, lazy), isDuplicateKeyError);
        }),
      ),
    );
  });

  it('refuses an array in an indexed field and stores nothing', async () => {
    await withDir((dir) =>
      withStore(dir, async (store) => {
        const c = store.collection('tags');
        await c.createIndex({ keys: { tag: 1 } });
        await assert.rejects(c.insertOne({ _id: 1, tag: ['a', 'b'] }), /field 'tag' of index 'tag_1' holds an array/);
        await c.insertOne({ _id: 2, tag: 'a' });
        await assert.rejects(c.updateOne({ _id: 2 }, { $set: { tag: ['a'] } }), /holds an array/);
        assert.deepEqual(await c.find({}), [{ _id: 2, tag: 'a' }]);
        assert.equal(await c.countDocuments({ tag: 'a' }), 1);
      }),
    );
  });

  it('refuses a NUL or an unpaired surrogate in an indexed string with InvalidKeyError, and stores nothing', async () => {
    await withDir((dir) =>
      withStore(dir, async (store) => {
        const c = store.collection('emails');
        await c.createIndex({ keys: { email: 1 }, unique: true });
        await c.insertOne({ _id: 1, email: 'a\ufffd@x' });
        const invalid = (err: unknown) => err instanceof InvalidKeyError && /email/.test(err.field);
        // The document would keep U+FFFD in its place, so it would disagree with its own index entry.
        for (const email of ['a\ud800@x', 'a\u0000@x']) {
          await assert.rejects(c.insertOne({ _id: 2, email }), invalid, JSON.stringify(email));
          await assert.rejects(c.updateOne({ _id: 1 }, { $set: { email } }), invalid, JSON.stringify(email));
        }
        assert.deepEqual(await c.find({}), [{ _id: 1, email: 'a\ufffd@x' }]);
      }),
    );
  });

  it('rolls back a whole updateMany that hits a unique violation midway', async () => {
    await withDir((dir) =>
      withStore(dir, async (store) => {
        const c = store.collection('slugs');
        await c.createIndex({ keys: { slug: 1 }, unique: true });
        for (let i = 0; i < 3; i++) await c.insertOne({ _id: i, slug: `s${i}`, group: 'g' });
        await assert.rejects(c.updateMany({ group: 'g' }, { $set: { slug: 'same' } }), isDuplicateKeyError);
        assert.deepEqual(
          (await c.find({}, { sort: { _id: 1 } })).map((d) => d.slug),
          ['s0', 's1', 's2'],
        );
        assert.equal(await c.countDocuments({ slug: 'same' }), 0);
      }),
    );
  });

  it('answers the same through an index as through a scan, over mixed value types', async () => {
    await withDir((dir) =>
      withStore(dir, async (store) => {
        const indexed = store.collection('mixed_indexed');
        const scanned = store.collection('mixed_scanned');
        await indexed.createIndex({ keys: { g: 1, v: 1 } });
        await indexed.createIndex({ keys: { v: -1 } });
        const values: unknown[] = [null, undefined, -2.5, 0, 3, 7, 42, '', 'a', 'b', 'ab', false, true, new Date(0), new Date(5000)];
        const docs = Array.from({ length: 150 }, (_, i) => {
          const v = values[(i * 7) % values.length];
          return { _id: i, g: i % 2 === 0 ? 'x' : 'y', ...(v === undefined ? {} : { v }) };
        });
        for (const doc of docs) await Promise.all([indexed.insertOne(doc), scanned.insertOne(doc)]);
        const queries: [Record<string, unknown>, Record<string, 1 | -1> | undefined, number][] = [
          [{ v: 3 }, undefined, 0],
          [{ v: null }, undefined, 0],
          [{ v: { $gt: 0 } }, { v: 1 }, 0],
          [{ v: { $gte: 0, $lte: 7 } }, { v: -1 }, 4],
          [{ v: { $lt: 'b' } }, { v: 1 }, 0],
          [{ v: { $gt: new Date(0) } }, undefined, 0],
          [{ v: { $gte: false } }, { v: -1 }, 0],
          [{ g: 'x' }, { v: 1 }, 10],
          [{ g: 'y', v: { $gt: 'a' } }, { v: -1 }, 3],
          [{ g: 'y', v: 'a' }, undefined, 0],
          [{}, { v: -1 }, 12],
          [{}, { v: 1 }, 12],
        ];
        for (const [filter, sort, limit] of queries) {
          const opts = { ...(sort ? { sort } : {}), limit };
          const a = (await indexed.find(filter, opts)).map((d) => d._id);
          const b = (await scanned.find(filter, opts)).map((d) => d._id);
          assert.deepEqual(sort ? a : a.sort(), sort ? b : b.sort(), `query ${JSON.stringify({ filter, sort, limit })}`);
          assert.equal(await indexed.countDocuments(filter), await scanned.countDocuments(filter));
        }
      }),
    );
  });

  describe('lazy point writes (applied at once, written once per batch)', () => {
    const lazy = { writeConcern: { j: false } } as const;

    it('gives every write the result it would get run one at a time, in the order issued', async () => {
      // Random groups of writes to three documents, each group issued without waiting, mixing lazy
      // point writes (the in-memory path), durable ones and lazy ones that take the transaction path
      // (updateMany), some conditional, some moving an indexed field, some failing. A second store
      // runs the same writes one at a time, all durable: every result and every state must agree.
      await withDir((dirA) =>
        withDir((dirB) =>
          withStore(dirA, (concurrent) =>
            withStore(dirB, async (sequential) => {
              type W = { _id: string; n: number; level: number; tags: string[]; name: string };
              const a = concurrent.collection<W>('w');
              const b = sequential.collection<W>('w');
              for (const c of [a, b]) {
                await c.createIndex({ keys: { level: 1 } });
                for (const id of ['x', 'y', 'z']) await c.insertOne({ _id: id, n: 50, level: 0, tags: [], name: id });
              }
              let seed = 7;
              const rand = (k: number) => {
                seed = (seed * 1103515245 + 12345) % 2 ** 31;
                return seed % k;
              };
              type Op = (c: typeof a, durable: boolean) => Promise<unknown>;
              const ops: Op[] = [
                (c, d) => c.updateOne({ _id: 'xyz'[rand(3)]!, n: { $gte: 7 } }, { $inc: { n: -7 }, $push: { tags: `t${rand(20)}` } }, d ? {} : lazy),
                (c, d) => {
                  const t = `t${rand(20)}`;
                  return c.findOneAndUpdate(
                    { _id: 'xyz'[rand(3)]!, tags: t },
                    { $pull: { tags: t }, $inc: { n: 3 } },
                    { returnDocument: rand(2) ? 'after' : 'before', ...(d ? {} : lazy) },
                  );
                },
                (c, d) => c.updateOne({ _id: 'xyz'[rand(3)]! }, { $set: { level: rand(4) } }, d ? {} : lazy),
                (c) => c.findOneAndUpdate({ _id: 'xyz'[rand(3)]! }, { $inc: { n: 11 } }),
                (c) => c.updateMany({ level: rand(4) }, { $inc: { n: 1 } }),
                (c, d) => c.updateOne({ _id: 'xyz'[rand(3)]! }, { $inc: { name: 1 } }, d ? {} : lazy), // fails: not a number
                (c, d) => c.updateOne({ _id: 'nobody', n: 1 }, { $inc: { n: 1 } }, d ? {} : lazy),
              ];
              const settle = (p: Promise<unknown>) =>
                p.then(
                  (value) => ({ value }),
                  (err: unknown) => ({ error: String(err) }),
                );
              for (let group = 0; group < 60; group++) {
                const picks = Array.from({ length: 1 + rand(25) }, () => ({ op: rand(ops.length), seed: rand(1_000_000) }));
                const run = (c: typeof a, durable: boolean, pick: { op: number; seed: number }) => {
                  seed = pick.seed; // the same random arguments on both stores
                  return settle(ops[pick.op]!(c, durable));
                };
                const together = await Promise.all(picks.map((p) => run(a, false, p)));
                const oneByOne = [];
                for (const p of picks) oneByOne.push(await run(b, true, p));
                assert.deepEqual(together, oneByOne, `group ${group}`);
                assert.deepEqual(await a.find({}), await b.find({}), `state after group ${group}`);
                for (let level = 0; level < 4; level++) assert.deepEqual(await a.find({ level }), await b.find({ level }));
              }
            }),
          ),
        ),
      );
    });

    it('keeps documents and their index entries after the store is reopened', async () => {
      await withDir(async (dir) => {
        await withStore(dir, async (store) => {
          const c = store.collection('w');
          await c.createIndex({ keys: { held: 1 } });
          await c.insertOne({ _id: 'w', held: 0, balance: 100 });
          const writes = Array.from({ length: 40 }, (_, i) =>
            c.updateOne({ _id: 'w', balance: { $gte: 3 } }, { $inc: { balance: -3, held: i % 2 ? 3 : -3 } }, lazy),
          );
          assert.equal((await Promise.all(writes)).filter((r) => r.modifiedCount === 1).length, 33);
        });
        await withStore(dir, async (store) => {
          const c = store.collection('w');
          assert.deepEqual(await c.findOne({ _id: 'w' }), { _id: 'w', held: -3, balance: 1 });
          assert.deepEqual(
            (await c.find({ held: -3 })).map((d) => d._id),
            ['w'],
          );
          assert.equal(await c.countDocuments({ held: 0 }), 0);
        });
      });
    });

    it('refuses a lazy write that would duplicate a unique key, and changes nothing', async () => {
      await withDir((dir) =>
        withStore(dir, async (store) => {
          const c = store.collection('users');
          await c.createIndex({ keys: { email: 1 }, unique: true });
          await c.insertOne({ _id: 1, email: 'a@x', n: 0 });
          await c.insertOne({ _id: 2, email: 'b@x', n: 0 });
          const bump = c.updateOne({ _id: 2 }, { $inc: { n: 1 } }, lazy);
          await assert.rejects(c.updateOne({ _id: 2 }, { $set: { email: 'a@x' }, $inc: { n: 1 } }, lazy), isDuplicateKeyError);
          assert.equal((await bump).modifiedCount, 1);
          assert.deepEqual(await c.findOne({ _id: 2 }), { _id: 2, email: 'b@x', n: 1 });
          assert.deepEqual(
            (await c.find({ email: 'a@x' })).map((d) => d._id),
            [1],
          );
        }),
      );
    });

    it('hands out copies: changing a returned document changes nothing stored', async () => {
      await withDir((dir) =>
        withStore(dir, async (store) => {
          const c = store.collection<{ _id: string; list: number[] }>('c');
          await c.insertOne({ _id: 'd', list: [1] });
          const after = await c.findOneAndUpdate({ _id: 'd' }, { $push: { list: 2 } }, { returnDocument: 'after', ...lazy });
          after!.list.push(99);
          const again = await c.findOneAndUpdate({ _id: 'd' }, { $push: { list: 3 } }, { returnDocument: 'before', ...lazy });
          assert.deepEqual(again, { _id: 'd', list: [1, 2] });
          again!.list.push(98);
          assert.deepEqual(await c.findOne({ _id: 'd' }), { _id: 'd', list: [1, 2, 3] });
        }),
      );
    });

    it('sees the lazy writes of another store instance on the same directory', async () => {
      await withDir((dir) =>
        withStore(dir, (first) =>
          withStore(dir, async (second) => {
            await first.collection('w').insertOne({ _id: 'w', n: 0 });
            const [one, two, three] = await Promise.all([
              first.collection('w').updateOne({ _id: 'w', n: 0 }, { $inc: { n: 1 } }, lazy),
              second.collection('w').updateOne({ _id: 'w', n: 1 }, { $inc: { n: 1 } }, lazy),
              first.collection('w').updateOne({ _id: 'w', n: 2 }, { $inc: { n: 1 } }, lazy),
            ]);
            assert.deepEqual([one.modifiedCount, two.modifiedCount, three.modifiedCount], [1, 1, 1]);
            assert.deepEqual(await second.collection('w').findOne({ _id: 'w' }), { _id: 'w', n: 3 });
            // A durable write through the other instance comes after a lazy one whose write to
            // LMDB is still deferred: it must be queued behind it, not drop it.
            await first.collection('w').updateOne({ _id: 'w' }, { $inc: { n: 1 } }, lazy);
            const after = await second.collection('w').findOneAndUpdate({ _id: 'w' }, { $inc: { n: 10 } });
            assert.deepEqual(after, { _id: 'w', n: 14 });
            assert.deepEqual(await first.collection('w').findOne({ _id: 'w' }), { _id: 'w', n: 14 });
          }),
        ),
      );
    });
  });

  it('refuses in-process JavaScript in filters', async () => {
    await withDir((dir) =>
      withStore(dir, async (store) => {
        const c = store.collection('js');
        await c.insertOne({ _id: 1 });
        await assert.rejects(c.find({ $where: () => true }), /scriptEnabled/);
      }),
    );
  });

  it('refuses operations after close', async () => {
    await withDir(async (dir) => {
      const store = await openEmbeddedStore({ dir });
      const c = store.collection('x');
      await store.close();
      await assert.rejects(c.insertOne({ _id: 1 }), /closed/);
      await assert.rejects(store.ping(), /closed/);
    });
  });

  it('keeps every acknowledged write through kill -9, with no torn document', { timeout: 60_000 }, async () => {
    await withDir(async (dir) => {
      const child = spawn(process.execPath, [...nodeArgsFor(join(FIXTURES, 'writer.ts')), dir], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
      const acked: number[] = [];
      for await (const line of createInterface({ input: child.stdout })) {
        acked.push(Number(line));
        if (acked.length === 400) child.kill('SIGKILL');
      }
      assert.equal(await exited, 'SIGKILL', 'the writer must die by SIGKILL, not finish or crash');
      assert.ok(acked.length >= 400);

      await withStore(dir, async (store) => {
        const docs = store.collection('durability');
        for (const seq of acked) assert.ok(await docs.findOne({ _id: seq }), `acknowledged document ${seq} was lost`);
        const all = await docs.find({});
        assert.ok(all.length >= acked.length);
        for (const doc of all) {
          assert.equal(doc.payload, payloadFor(doc.seq as number).payload, `document ${doc._id} is torn`);
          assert.equal(sha256(doc.payload as string), doc.sha);
        }
        // The index committed with the documents: an indexed count agrees with a scan.
        for (let bucket = 0; bucket < 4; bucket++) {
          assert.equal(await docs.countDocuments({ bucket }), all.filter((d) => d.bucket === bucket).length);
        }
      });
    });
  });

  it('answers a sorted, limited query over an unindexed field without holding the collection in memory', { timeout: 120_000 }, async () => {
    await withDir(async (dir) => {
      // 50k documents of ~3 KB are ~150 MB decoded; the child gets a 64 MB heap.
      const count = 50_000;
      const child = spawn(process.execPath, ['--max-old-space-size=64', ...nodeArgsFor(join(FIXTURES, 'sorted-scan.ts')), dir, String(count)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
      assert.equal(code, 0, 'the query process must not run out of heap');
      const { top } = JSON.parse(out) as { top: { _id: number; score: number }[] };
      assert.deepEqual(
        top.map((d) => d.score),
        [count - 1, count - 2, count - 3, count - 4, count - 5],
      );
    });
  });
});
