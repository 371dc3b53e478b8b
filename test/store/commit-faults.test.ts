// The embedded store when its commits fail, without root (test/store/disk-full.test.ts fills a real
// tmpfs): a fault injected in the LMDB environment the store writes through makes every transaction
// of a stretch roll back and report lmdb-js's "Commit failed", as a full disk does. Lazy writes
// acknowledged before or during it (a wallet's holds and settles) are kept, read, and written once
// the fault ends: exactly once, on disk after a reopen; durable writes are refused at once.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ABORT, open, type RootDatabase } from 'lmdb';
import { acquireDirectory, type Directory } from '../../src/store/embedded/directory.ts';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import { StoreUnavailableError, type Store } from '../../src/store/port.ts';

interface Wallet {
  _id: string;
  balance: number;
  debits: string[];
  [k: string]: unknown;
}

const LAZY = { writeConcern: { j: false } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** While `fault.on`, every transaction's writes are rolled back and its promise rejects as a failed commit does. */
function injectFaults(env: RootDatabase): { on: boolean; failed: number } {
  const fault = { on: false, failed: 0 };
  const real = env.childTransaction.bind(env);
  env.childTransaction = (<T>(callback: () => T) => {
    let aborted = false;
    let result: T;
    return real(() => {
      result = callback();
      if (!fault.on) return result;
      aborted = true;
      return ABORT;
    }).then((value) => {
      if (!aborted) return value;
      fault.failed++;
      const cause = Promise.reject(new Error('ENOSPC (injected)'));
      cause.catch(() => undefined);
      throw Object.assign(new Error('Commit failed (see commitError for details)'), { commitError: cause });
    }) as Promise<T>;
  }) as typeof env.childTransaction;
  return fault;
}

describe('embedded store: commits that fail (a fault injected)', () => {
  let dir: string;
  let held: Directory;
  let fault: { on: boolean; failed: number };
  let store: Store;
  const errors: unknown[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-faults-'));
    // The first opening of a directory makes its environment (directory.ts): this one, faulty.
    held = acquireDirectory(dir, () => {
      const env = open({ path: dir, maxDbs: 512, overlappingSync: false });
      fault = injectFaults(env);
      return env;
    });
    store = await openEmbeddedStore({ dir, onError: (err) => errors.push(err) });
  });
  after(async () => {
    await store.close();
    await held.release();
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps lazy writes whose commit failed, shows them, refuses durable writes at once, and commits each exactly once when the fault ends', async () => {
    const wallets = store.collection<Wallet>('wallets');
    await wallets.createIndex({ keys: { balance: 1 } });
    await wallets.insertOne({ _id: 'w1', balance: 10_000, debits: [] });
    await wallets.insertOne({ _id: 'w2', balance: 10_000, debits: [] });
    const settle = (id: string, n: number) => wallets.updateOne({ _id: id }, { $inc: { balance: -n }, $push: { debits: `d${n}` } }, LAZY);

    fault.on = true;
    // Point writes (the overlay's path) and one through a transaction: a durable write in flight
    // sends the lazy ones queued with it through the transaction path.
    await settle('w1', 1);
    const durable = wallets.updateOne({ _id: 'w2' }, { $set: { note: 'durable' } });
    const viaTxn = settle('w2', 2);
    await assert.rejects(durable, /Commit failed/, 'the durable write queued before the failure hears it');
    await viaTxn;
    await settle('w1', 3);
    for (let i = 0; i < 50 && !store.failing?.(); i++) await sleep(5);
    assert.equal(store.failing?.(), true, 'failing while commits fail');
    assert.ok(fault.failed > 0);

    // While failing: durable writes refused at once, lazy point writes still applied, reads see them.
    await assert.rejects(wallets.insertOne({ _id: 'w3', balance: 1, debits: [] }), StoreUnavailableError);
    await assert.rejects(store.ping(), StoreUnavailableError);
    await settle('w2', 4);
    await sleep(120); // a retry or two, failing again
    assert.equal(store.failing?.(), true);
    assert.deepEqual(await wallets.findOne({ _id: 'w1' }), { _id: 'w1', balance: 9_996, debits: ['d1', 'd3'] });
    assert.deepEqual(
      (await wallets.find({ balance: { $lt: 10_000 } }, { sort: { _id: 1 } })).map((w) => [w._id, w.balance]),
      [
        ['w1', 9_996],
        ['w2', 9_994],
      ],
      'a query by index sees the kept versions',
    );
    assert.equal(await wallets.countDocuments({ balance: { $lt: 9_995 } }), 1);

    fault.on = false;
    for (let i = 0; i < 200 && store.failing?.(); i++) await sleep(10);
    assert.equal(store.failing?.(), false, 'writes commit again: no longer failing');
    await settle('w1', 5);
    await wallets.insertOne({ _id: 'w3', balance: 1, debits: [] });

    // On disk, each acknowledged lazy write once, the refused durable ones not at all.
    await store.close();
    store = await openEmbeddedStore({ dir, onError: (err) => errors.push(err) });
    const again = store.collection<Wallet>('wallets');
    assert.deepEqual(await again.find({}, { sort: { _id: 1 } }), [
      { _id: 'w1', balance: 9_991, debits: ['d1', 'd3', 'd5'] },
      { _id: 'w2', balance: 9_994, debits: ['d2', 'd4'] },
      { _id: 'w3', balance: 1, debits: [] },
    ]);
  });

  // msgpackr mints a shared record structure when a document shape is first written, and lmdb-js
  // saves it inside the transaction that first uses it: a failed commit lost it while the encoder
  // kept using it, so documents of that shape written after the fault read back wrong after a
  // restart ("Data read, but end of buffer not reached": issue 42's full-disk test).
  it('a document shape first written in a failed commit still reads back after the fault ends and a reopen', async () => {
    const wallets = store.collection<Wallet>('wallets');
    fault.on = true;
    await wallets.updateOne({ _id: 'w1' }, { $set: { shapeA: 1 } }, LAZY); // a new shape, its structure lost
    for (let i = 0; i < 50 && !store.failing?.(); i++) await sleep(5);
    assert.equal(store.failing?.(), true);
    fault.on = false;
    for (let i = 0; i < 200 && store.failing?.(); i++) await sleep(10);
    assert.equal(store.failing?.(), false);
    const reopened = async () => {
      await store.close();
      store = await openEmbeddedStore({ dir, onError: (err) => errors.push(err) });
      const found = await store.collection<Wallet>('wallets').find({ _id: { $in: ['w1', 'w4', 'w5', 'w6'] } }, { sort: { _id: 1 } });
      return found.map(({ _id, shapeA, shapeB }) => [_id, shapeA, shapeB]);
    };
    // The same shape again: its structure was written again when the fault ended.
    await wallets.insertOne({ _id: 'w4', balance: 4, debits: [], shapeA: 4 });
    assert.deepEqual(await reopened(), [
      ['w1', 1, undefined],
      ['w4', 4, undefined],
    ]);
    // A newer shape (which made msgpackr reuse the lost structure's id), and the first one again.
    const wallets2 = store.collection<Wallet>('wallets');
    await wallets2.insertOne({ _id: 'w5', balance: 5, debits: [], shapeA: 5, shapeB: 5 });
    await wallets2.insertOne({ _id: 'w6', balance: 6, debits: [], shapeA: 6 });
    assert.deepEqual(await reopened(), [
      ['w1', 1, undefined],
      ['w4', 4, undefined],
      ['w5', 5, 5],
      ['w6', 6, undefined],
    ]);
  });

  it('closes while commits still fail: tries for a bounded time, then reports the writes it loses instead of hanging', async () => {
    const wallets = store.collection<Wallet>('wallets');
    fault.on = true;
    await wallets.updateOne({ _id: 'w3' }, { $inc: { balance: 1 } }, LAZY);
    for (let i = 0; i < 50 && !store.failing?.(); i++) await sleep(5);
    assert.equal(store.failing?.(), true);
    const t0 = Date.now();
    await store.close();
    const took = Date.now() - t0;
    assert.ok(took >= 2_000 && took < 6_000, `close tried for ${took} ms`);
    assert.ok(
      errors.some((e) => /closing while writes still fail to commit: the acknowledged lazy writes of 1 documents/.test(String(e))),
      'the loss is reported',
    );
    await held.release(); // the environment closes: what is lost is what a crash would lose
    fault.on = false;
    store = await openEmbeddedStore({ dir });
    assert.equal((await store.collection<Wallet>('wallets').findOne({ _id: 'w3' }))?.balance, 1, 'lost as in a crash');
  });
});
