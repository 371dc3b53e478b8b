// The default store: one node, LMDB for storage and mingo for MongoDB's query and update semantics
// (with fast paths for the simple filters and updates of hot writes: embedded/fastpath.ts).
//
// Layout of the one LMDB environment in `dir`:
// - `["docs", collection]`: `_id` -> document (msgpack; Dates round-trip as Dates);
// - `["index", collection, name]`: dupSort, index key (see embedded/keys.ts) -> `_id`;
// - `meta`: `["indexes", collection]` -> the collection's index specs, so indexes survive restarts.
//
// Every write runs as one LMDB child transaction queued with lmdb-js's async batching: all writes
// issued in one event turn share one commit and one fsync (group commit), each callback reads and
// writes atomically (the filter is evaluated inside it, so conditional updates cannot race), and a
// callback that throws (duplicate key, unindexable value) rolls back its own writes only, so a
// document and its index entries never disagree. A write's promise resolves after the commit is
// synced (overlappingSync is off for that reason), so an acknowledged write survives a crash.
// A write with `writeConcern: { j: false }` resolves before the commit: later writes see it, and a
// crash before that commit loses it. An update of one document named by `_id` (a wallet's hold or
// settle) is decided and applied at once in memory, on the document's latest version, without
// waiting for the write queue, and the document is written once per batch (its write queued up to
// 2 ms later: directory.ts FLUSH_DELAY_MS) however many such writes it took (embedded/overlay.ts
// says when this path applies and why it stays exact); any other lazy write resolves once its
// callback has applied it inside its batch. Reads see them too:
// a read of a collection with such a write in flight waits for its commit (about a millisecond)
// first, so a read never trails a write acknowledged before it, as on MongoDB, and whatever a read
// shows is on disk.
//
// (Measured alternatives, so nobody re-tries them blind: lmdb-js's transactionSync keeps small
// commits in process memory until the next sync, so kill -9 loses them, and fsyncs larger ones on
// the main thread; `noSync` plus a shared env.sync is fast but lets a power loss corrupt LMDB,
// whose crash safety relies on syncing data pages before the meta page at every commit;
// overlappingSync with durable writes awaiting `env.flushed` (so lazy ones would be visible at
// once) made the metered path slower at every concurrency, 2.83 vs 2.40 ms at one call in flight.)

import { open, type Database, type RootDatabase } from 'lmdb';
import { Query } from 'mingo';
import { Context } from 'mingo/core';
import * as queryOperators from 'mingo/operators/query';
import * as projectionOperators from 'mingo/operators/projection';
import { Query as BareQuery } from 'mingo/query';
import { resolve } from 'mingo/util';
import { mkdirSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import {
  DuplicateKeyError,
  indexName,
  type Collection,
  type DeleteResult,
  type Doc,
  type Filter,
  type FindOneAndUpdateOptions,
  type FindOptions,
  type Id,
  type IndexSpec,
  type Sort,
  type Store,
  type Update,
  type UpdateOptions,
  type UpdateResult,
  type WriteOptions,
} from './port.ts';
import {
  applyUpdate,
  assertReplacement,
  assertUpdate,
  buildUpsert,
  cloneDoc,
  project,
  replacement,
  sortComparator,
} from './embedded/documents.ts';
import { fastMatcher } from './embedded/fastpath.ts';
import { upsertSeed } from './embedded/filter.ts';
import { AFTER, TAG, assertId, documentKey, idKey, sameKey, type IndexKey } from './embedded/keys.ts';
import { checkIds } from './key-strings.ts';
import { acquireDirectory, type Directory } from './embedded/directory.ts';
import type { Overlay, PendingDoc } from './embedded/overlay.ts';
import { planQuery, type KeyRange, type Plan } from './embedded/plan.ts';
import { TopK } from './embedded/topk.ts';

export interface EmbeddedStoreOptions {
  dir: string;
  /** How often TTL indexes are swept (default 60 s, like MongoDB's TTL monitor). */
  ttlSweepMs?: number;
  /** LMDB map size; lmdb-js grows the map by itself when this is not set. */
  mapSizeBytes?: number;
  /** Told about a failed TTL sweep or a failed commit of a `j: false` write; by default dropped. */
  onError?: (err: unknown) => void;
}

/** Where each collection's database keeps its shared msgpack structures (lmdb-js's convention). */
const SHARED_STRUCTURES = Symbol.for('structures');
/** Sub-databases per environment: a collection takes one plus one per index. */
const MAX_DBS = 512;
/** Documents deleted per TTL transaction, so a large expiry never holds the write lock for long. */
const TTL_BATCH = 1000;

export async function openEmbeddedStore(opts: EmbeddedStoreOptions): Promise<Store> {
  mkdirSync(opts.dir, { recursive: true });
  const directory = acquireDirectory(opts.dir, () =>
    open({
      path: opts.dir,
      maxDbs: MAX_DBS,
      // With overlappingSync (lmdb-js's default off Windows) a write resolves once committed but before
      // it is flushed; off, a resolved write is on disk.
      overlappingSync: false,
      ...(opts.mapSizeBytes ? { mapSize: opts.mapSizeBytes } : {}),
    }),
  );
  return new EmbeddedStore(directory, opts.ttlSweepMs ?? 60_000, opts.onError ?? (() => {}));
}

interface StoredIndex {
  name: string;
  keys: Record<string, 1 | -1>;
  unique: boolean;
  sparse: boolean;
  expireAfterSeconds?: number;
}

interface IndexState {
  readonly def: StoredIndex;
  readonly name: string;
  readonly fields: readonly string[];
  readonly unique: boolean;
  readonly sparse: boolean;
  readonly db: Database<Id, IndexKey>;
}

type MetaKey = [string, string];

/** What a collection needs from its store. */
interface StoreContext {
  readonly env: RootDatabase;
  /** Its lazy point writes not committed yet (embedded/overlay.ts). */
  readonly overlay: Overlay;
  /** Where lazy point writes' flushes wait (shared by every store instance on the directory). */
  readonly directory: Directory;
  onError(err: unknown): void;
  readonly meta: Database<StoredIndex[], MetaKey>;
  assertOpen(): void;
}

class EmbeddedStore implements Store {
  readonly kind = 'embedded' as const;
  private readonly meta: Database<StoredIndex[], MetaKey>;
  private readonly collections = new Map<string, EmbeddedCollection<Doc>>();
  private readonly timer: NodeJS.Timeout;
  private sweeping: Promise<void> | undefined;
  private closed = false;
  private readonly env: RootDatabase;

  constructor(
    private readonly directory: Directory,
    ttlSweepMs: number,
    private readonly onError: (err: unknown) => void,
  ) {
    this.env = directory.env;
    this.meta = this.env.openDB<StoredIndex[], MetaKey>('meta', {});
    this.timer = setInterval(() => this.startSweep(), ttlSweepMs);
    this.timer.unref();
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    this.assertOpen();
    return this.collectionState(name) as unknown as Collection<T>;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    this.env.getStats();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.sweeping;
    await this.directory.release();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the embedded store is closed');
  }

  private collectionState(name: string): EmbeddedCollection<Doc> {
    let c = this.collections.get(name);
    if (!c) {
      const ctx: StoreContext = {
        env: this.env,
        overlay: this.directory.overlay(name),
        directory: this.directory,
        meta: this.meta,
        assertOpen: () => this.assertOpen(),
        onError: this.onError,
      };
      c = new EmbeddedCollection<Doc>(name, ctx);
      this.collections.set(name, c);
    }
    return c;
  }

  private startSweep(): void {
    if (this.sweeping || this.closed) return;
    this.sweeping = this.sweep()
      .catch(this.onError)
      .finally(() => {
        this.sweeping = undefined;
      });
  }

  /** Deletes expired documents of every TTL index, in bounded batches, until none is left. */
  private async sweep(): Promise<void> {
    const ttl: { collection: string; index: string; seconds: number }[] = [];
    for (const { key, value } of this.meta.getRange({})) {
      for (const def of value) {
        if (def.expireAfterSeconds !== undefined) ttl.push({ collection: key[1], index: def.name, seconds: def.expireAfterSeconds });
      }
    }
    for (const { collection, index, seconds } of ttl) {
      const c = this.collectionState(collection);
      const cutoff = Date.now() - seconds * 1000;
      let removed = TTL_BATCH;
      while (removed === TTL_BATCH && !this.closed) {
        removed = await c.expire(index, cutoff, TTL_BATCH);
      }
    }
  }
}

class EmbeddedCollection<T extends Doc> implements Collection<T> {
  private readonly docs: Database<T, Id>;
  private indexes: IndexState[];
  /** The overlay's indexGeneration when adoptNewIndexes last read the stored list. */
  private indexesSeen = -1;
  /** Lazy point writes not committed yet, and what else is in flight (embedded/overlay.ts). */
  private readonly overlay: Overlay;

  constructor(
    readonly name: string,
    private readonly ctx: StoreContext,
  ) {
    if (name.length === 0 || name.length > 200) throw new Error(`invalid collection name '${name}'`);
    // Shared msgpack structures: each document shape's field names are stored once per collection
    // instead of inline in every document, which makes a point read ~3x faster (1.3 vs 3.9 µs for a
    // wallet). Documents written before are still read; ones written with it need it to be read.
    this.docs = ctx.env.openDB<T, Id>(JSON.stringify(['docs', name]), { sharedStructuresKey: SHARED_STRUCTURES });
    this.overlay = ctx.overlay;
    this.indexes = (ctx.meta.get(['indexes', name]) ?? []).map((def) => this.openIndex(def));
  }

  // ---- reads: synchronous LMDB reads on the latest committed snapshot ----

  async findOne(filter: Filter, options: Omit<FindOptions, 'limit' | 'skip'> = {}): Promise<T | null> {
    checkIds(this.name, { filter });
    this.ctx.assertOpen();
    if (this.overlay.lazyCommit) await this.lazyCommitted();
    // `{ _id: v }` alone, the most common read (keys, accounts, models, wallets): a point lookup.
    const id = options.sort || options.projection ? undefined : pointId(filter);
    if (id !== undefined) return this.docs.get(idKey(id)) ?? null;
    const [doc] = this.select(filter, options.sort, 0, 1);
    return doc ? project([doc], options.projection)[0]! : null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    checkIds(this.name, { filter });
    this.ctx.assertOpen();
    if (this.overlay.lazyCommit) await this.lazyCommitted();
    const skip = options.skip ?? 0;
    if (skip < 0) throw new Error('skip must be non-negative');
    // The driver treats limit 0 as "no limit" and a negative limit as its absolute value.
    const limit = options.limit ? Math.abs(options.limit) : Infinity;
    return project(this.select(filter, options.sort, skip, limit), options.projection);
  }

  async countDocuments(filter: Filter): Promise<number> {
    checkIds(this.name, { filter });
    this.ctx.assertOpen();
    if (this.overlay.lazyCommit) await this.lazyCommitted();
    if (Object.keys(filter).length === 0) return this.docs.getCount();
    let n = 0;
    for (const _ of this.matches(filter, planQuery(filter, undefined, this.indexes))) n++;
    return n;
  }

  // ---- writes: each one LMDB child transaction ----

  async insertOne(doc: T, options: WriteOptions = {}): Promise<{ insertedId: Id }> {
    assertId(doc._id, this.name);
    return this.write(options, () => {
      this.insert(doc);
      return { insertedId: doc._id };
    });
  }

  async insertMany(docs: T[], options: { ordered?: boolean } & WriteOptions = {}): Promise<{ insertedCount: number }> {
    for (const doc of docs) assertId(doc._id, this.name);
    const ordered = options.ordered ?? true;
    // One write for the batch. insert() checks every unique index before writing anything, so a
    // duplicate leaves no partial document behind and the others still go in.
    const { insertedCount, error } = await this.write(options, () => {
      let count = 0;
      let first: DuplicateKeyError | null = null;
      for (const doc of docs) {
        try {
          this.insert(doc);
          count++;
        } catch (err) {
          if (!(err instanceof DuplicateKeyError)) throw err;
          first ??= err;
          if (ordered) break;
        }
      }
      return { insertedCount: count, error: first };
    });
    if (error) {
      error.insertedCount = insertedCount;
      throw error;
    }
    return { insertedCount };
  }

  async updateOne(filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    checkIds(this.name, { filter, update });
    assertUpdate(update);
    const lazy = options.writeConcern?.j === false ? this.lazyPointUpdate(filter, update, options.upsert ?? false) : undefined;
    if (lazy !== undefined) return { matchedCount: lazy ? 1 : 0, modifiedCount: lazy?.modified ? 1 : 0, upsertedId: null };
    return this.write(options, () => {
      const current = this.first(filter);
      if (current) return { matchedCount: 1, modifiedCount: this.modify(current, update, true) ? 1 : 0, upsertedId: null };
      if (!options.upsert) return { matchedCount: 0, modifiedCount: 0, upsertedId: null };
      return { matchedCount: 0, modifiedCount: 0, upsertedId: this.upsert(buildUpsert(filter, update))._id };
    });
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    checkIds(this.name, { filter, update });
    assertUpdate(update);
    return this.write({}, () => {
      const ids = this.matchingIds(filter);
      let modified = 0;
      for (const id of ids) {
        const current = this.fetch(id);
        if (current && this.modify(current, update, true)) modified++;
      }
      return { matchedCount: ids.length, modifiedCount: modified, upsertedId: null };
    });
  }

  async findOneAndUpdate(filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<T | null> {
    checkIds(this.name, { filter, update });
    assertUpdate(update);
    const after = (options.returnDocument ?? 'after') === 'after';
    const lazy = options.writeConcern?.j === false ? this.lazyPointUpdate(filter, update, options.upsert ?? false) : undefined;
    // Projected first, so a long list the caller left out is not copied.
    if (lazy !== undefined) return lazy ? cloneDoc(project([after ? lazy.after : lazy.before], options.projection)[0]!) : null;
    const doc = await this.write(options, () => {
      const current = this.first(filter, options.sort);
      if (current) {
        if (!after) {
          this.modify(current, update, false);
          return current;
        }
        const next = this.modify(current, update, true);
        // Re-read the stored version when the update holds objects, so the caller never shares
        // them with its update document.
        return next && sharesObjects(update) ? this.fetch(next._id) : (next ?? current);
      }
      if (!options.upsert) return undefined;
      const inserted = this.upsert(buildUpsert(filter, update));
      return after ? this.fetch(inserted._id) : undefined;
    });
    return doc ? project([doc], options.projection)[0]! : null;
  }

  async replaceOne(filter: Filter, doc: T, options: UpdateOptions = {}): Promise<UpdateResult> {
    checkIds(this.name, { filter, docs: [doc] });
    assertReplacement(doc);
    return this.write(options, () => {
      const current = this.first(filter);
      if (current) {
        if (doc._id !== undefined && idKey(doc._id) !== idKey(current._id)) throw immutableId();
        const next = replacement(doc, current._id) as T;
        if (isDeepStrictEqual(current, next)) return { matchedCount: 1, modifiedCount: 0, upsertedId: null };
        this.store(this.indexKeys(current), next);
        return { matchedCount: 1, modifiedCount: 1, upsertedId: null };
      }
      if (!options.upsert) return { matchedCount: 0, modifiedCount: 0, upsertedId: null };
      const id = doc._id ?? upsertSeed(filter)._id;
      return { matchedCount: 0, modifiedCount: 0, upsertedId: this.upsert(replacement(doc, id))._id };
    });
  }

  async deleteOne(filter: Filter, options: WriteOptions = {}): Promise<DeleteResult> {
    checkIds(this.name, { filter });
    return this.write(options, () => {
      const doc = this.first(filter);
      if (doc) this.remove(doc);
      return { deletedCount: doc ? 1 : 0 };
    });
  }

  async deleteMany(filter: Filter): Promise<DeleteResult> {
    checkIds(this.name, { filter });
    return this.write({}, () => {
      let deleted = 0;
      for (const id of this.matchingIds(filter)) {
        const doc = this.fetch(id);
        if (!doc) continue;
        this.remove(doc);
        deleted++;
      }
      return { deletedCount: deleted };
    });
  }

  async findOneAndDelete(filter: Filter, options: { sort?: Sort } & WriteOptions = {}): Promise<T | null> {
    checkIds(this.name, { filter });
    return this.write(options, () => {
      const doc = this.first(filter, options.sort);
      if (doc) this.remove(doc);
      return doc ?? null;
    });
  }

  async createIndex(spec: IndexSpec): Promise<string> {
    const def = normalizeIndex(spec);
    if (def.name === '_id_') return def.name;
    this.ctx.assertOpen();
    const existing = this.existingIndex(def);
    if (existing) return existing;
    // Creating a named database is its own LMDB transaction, so it happens before the build.
    const db = this.openIndexDb(def.name);
    const built = this.write({}, () => {
      // Checked again inside the transaction: a concurrent createIndex may have won the race.
      const again = this.existingIndex(def);
      if (again) return again;
      const index = this.indexState(def, db);
      this.build(index);
      this.ctx.meta.put(['indexes', this.name], [...this.indexes.map((i) => i.def), def]);
      // Registered inside the transaction, so every write queued after this one maintains it
      // (other instances' writes in this batch read the list inside the transaction too).
      this.indexes = [...this.indexes, index];
      this.overlay.indexGeneration++;
      return def.name;
    });
    // Bumped again once committed (reads outside a transaction see the new list from then on), or
    // failed: the build is undone on disk, so the index is forgotten in memory too.
    return built.then(
      (name) => {
        this.overlay.indexGeneration++;
        return name;
      },
      (err: unknown) => {
        this.indexes = this.indexes.filter((i) => i.name !== def.name || i.db !== db);
        this.overlay.indexGeneration++;
        throw err;
      },
    );
  }

  /** TTL: deletes up to `batch` documents whose indexed Date is at or before `cutoffMs`; resolves to how many. */
  expire(indexName: string, cutoffMs: number, batch: number): Promise<number> {
    return this.write({}, () => {
      const index = this.indexes.find((i) => i.name === indexName);
      const field = index?.fields[0];
      if (!index || field === undefined) return 0;
      const ids: Id[] = [];
      for (const { value } of index.db.getRange({ start: [TAG.date], end: [TAG.date, cutoffMs, AFTER], limit: batch })) {
        ids.push(value);
      }
      let removed = 0;
      for (const id of ids) {
        const doc = this.fetch(id);
        const at: unknown = doc && resolve(doc, field);
        if (!doc || !(at instanceof Date) || at.getTime() > cutoffMs) continue;
        this.remove(doc);
        removed++;
      }
      return removed;
    });
  }

  // ---- query execution ----

  private select(filter: Filter, sort: Sort | undefined, skip: number, limit: number): T[] {
    const activeSort = sort && Object.keys(sort).length > 0 ? sort : undefined;
    const plan = planQuery(filter, activeSort, this.indexes);
    const matches = this.matches(filter, plan);
    if (!activeSort || plan.ordered) return take(matches, skip, limit);
    const cmp = sortComparator(activeSort);
    if (limit === Infinity) return [...matches].sort(cmp).slice(skip);
    // Unordered source with a limit: keep only the best skip+limit documents while scanning.
    const top = new TopK<T>(skip + limit, cmp);
    for (const doc of matches) top.push(doc);
    return top.sorted().slice(skip);
  }

  private *matches(filter: Filter, plan: Plan<IndexState>): Generator<T> {
    const test = plan.exact || Object.keys(filter).length === 0 ? () => true : matcher(filter);
    for (const doc of this.candidates(plan)) if (test(doc)) yield doc;
  }

  private *candidates(plan: Plan<IndexState>): Generator<T> {
    switch (plan.kind) {
      case 'ids':
        for (const id of plan.ids) {
          const doc = this.docs.get(idKey(id));
          if (doc) yield doc;
        }
        return;
      case 'index':
        for (const { value: id } of plan.index.db.getRange(rangeOptions(plan.range, plan.reverse))) {
          const doc = this.docs.get(id);
          if (doc) yield doc;
        }
        return;
      case 'scan':
        for (const { value } of this.docs.getRange({ reverse: plan.reverse })) yield value;
        return;
    }
  }

  private first(filter: Filter, sort?: Sort): T | undefined {
    return this.select(filter, sort, 0, 1)[0];
  }

  /** The `_id`s of all matches, collected before any write so no cursor walks a database being modified. */
  private matchingIds(filter: Filter): Id[] {
    const ids: Id[] = [];
    for (const doc of this.matches(filter, planQuery(filter, undefined, this.indexes))) ids.push(doc._id);
    return ids;
  }

  // ---- writes inside a transaction ----

  /** Settles when the latest lazy write of the collection has committed (its flush queued now if deferred). */
  private lazyCommitted(): Promise<void> | undefined {
    this.ctx.directory.flushDeferred();
    return this.overlay.lazyCommit;
  }

  private write<R>(options: WriteOptions, fn: () => R): Promise<R> {
    this.ctx.assertOpen();
    this.ctx.directory.flushDeferred();
    const overlay = this.overlay;
    const run = (): R => {
      // Every pending lazy point write was flushed before this transaction (its flush was queued
      // first, and none is applied while this one is in flight): LMDB now has them all.
      overlay.pending.clear();
      this.adoptNewIndexes(true);
      return fn();
    };
    overlay.txnWrites++;
    const settled = (): void => {
      overlay.txnWrites--;
    };
    // childTransaction, not transaction: a throwing callback must roll back its partial writes
    // (lmdb-js keeps them otherwise); both join the same batched commit.
    if (options.writeConcern?.j !== false) {
      const done = this.ctx.env.childTransaction(run);
      done.then(settled, settled);
      return done;
    }
    return new Promise<R>((resolve, reject) => {
      let applied = false;
      const committed = this.ctx.env
        .childTransaction(() => {
          try {
            const result = run();
            applied = true;
            resolve(result);
            return result;
          } catch (err) {
            reject(err); // rolled back: the caller hears it, as for any write
            throw err;
          }
        })
        // Already acknowledged: a failed commit (disk full, I/O error) can only be reported.
        .then(
          () => undefined,
          (err: unknown) => {
            if (applied) this.ctx.onError(err);
          },
        );
      void committed.then(settled);
      this.awaitOnRead(committed);
    });
  }

  /** Makes reads wait for `committed`, the latest lazy write's commit (commits are ordered, so it covers every earlier one). */
  private awaitOnRead(committed: Promise<void>): void {
    const overlay = this.overlay;
    overlay.lazyCommit = committed;
    void committed.then(() => {
      if (overlay.lazyCommit === committed) overlay.lazyCommit = undefined;
    });
  }

  /**
   * A lazy update of the one document a filter names by `_id`, decided and applied here, at once,
   * on its latest version (pending or committed), and written to LMDB by one flush per batch
   * (embedded/overlay.ts). Resolves to the document before and after, or null when the filter does
   * not match; undefined when the write must go through a transaction instead: another write of the
   * collection is in flight, the filter names no single `_id`, the update would share objects with
   * the stored document, change a unique index's key or `_id`, insert (upsert), or fails (the
   * transaction path then reports the error as usual).
   */
  private lazyPointUpdate(filter: Filter, update: Update, upsert: boolean): { before: T; after: T; modified: boolean } | null | undefined {
    this.ctx.assertOpen();
    const overlay = this.overlay;
    const id = scalarId(filter._id);
    if (overlay.txnWrites > 0 || id === undefined || sharesObjects(update)) return undefined;
    const key = idKey(id);
    const entry = overlay.pending.get(key);
    const current = (entry ? entry.doc : this.docs.get(key)) as T | undefined;
    if (!current || !matcher(filter)(current)) return upsert ? undefined : null;
    const next = cloneDoc(current);
    try {
      if (!applyUpdate(next, update)) return { before: current, after: current, modified: false };
      if (idKey(next._id) !== key) return undefined;
      this.adoptNewIndexes(false);
      for (const index of this.indexes) {
        const after = documentKey(index, next, this.name); // throws for an unindexable value
        if (index.unique && !sameKey(documentKey(index, current, this.name), after)) return undefined;
      }
    } catch {
      return undefined;
    }
    const pending: PendingDoc = entry ?? { doc: next, version: 0, queued: false };
    pending.doc = next;
    pending.version++;
    if (!entry) overlay.pending.set(key, pending);
    if (!pending.queued) this.queueFlush(key, pending);
    return { before: current, after: next, modified: true };
  }

  /** Queues the write of a pending document into the next batch: whatever version it has when the batch runs. */
  private queueFlush(key: Id, pending: PendingDoc): void {
    const overlay = this.overlay;
    pending.queued = true;
    let committed!: () => void;
    this.awaitOnRead(
      new Promise<void>((resolve) => {
        committed = resolve;
      }),
    );
    // Queued synchronously when the delay ends or another write or a read comes first, so it
    // reaches LMDB before anything issued after it.
    this.ctx.directory.deferFlush(() => {
      let flushed = 0;
      this.ctx.env
        .childTransaction(() => {
          pending.queued = false;
          if (overlay.pending.get(key) !== pending) return;
          this.adoptNewIndexes(true);
          const stored = this.docs.get(key); // the version LMDB has, for its index entries
          this.store(this.indexKeys(stored), pending.doc as T);
          flushed = pending.version;
        })
        .then(
          () => {
            if (overlay.pending.get(key) === pending && pending.version === flushed) overlay.pending.delete(key);
          },
          (err: unknown) => {
            // Already acknowledged: lost with this batch, like any lazy write whose commit fails.
            if (overlay.pending.get(key) === pending) overlay.pending.delete(key);
            this.ctx.onError(err);
          },
        )
        .then(committed);
    });
  }

  /**
   * Another store instance on the same directory (in this process: the embedded store is for one)
   * may have added an index since this registry was loaded; a write that did not maintain it would
   * corrupt it. Indexes are only ever added, and the instance that adds one bumps the collection's
   * shared indexGeneration, so the stored list is read again only then (reading it on every write
   * cost two LMDB reads per metered call). Only a read inside a write transaction is remembered:
   * it sees the list the writes will meet, while one outside (a lazy write's decision) may come
   * before the commit of an index already registered inside its transaction.
   */
  private adoptNewIndexes(inTransaction: boolean): void {
    const generation = this.overlay.indexGeneration;
    if (generation === this.indexesSeen) return;
    if (inTransaction) this.indexesSeen = generation;
    const stored = this.ctx.meta.get(['indexes', this.name]) ?? [];
    if (stored.length === this.indexes.length) return;
    this.indexes = stored.map((def) => this.indexes.find((i) => i.name === def.name) ?? this.openIndex(def));
  }

  private fetch(id: Id): T | undefined {
    return this.docs.get(idKey(id));
  }

  private insert(doc: T): void {
    if (this.docs.doesExist(idKey(doc._id))) throw new DuplicateKeyError(this.name, '_id_');
    this.store(this.indexKeys(undefined), doc);
  }

  private upsert(doc: Record<string, unknown>): T {
    if (doc._id === undefined) {
      throw new Error(`${this.name}: an upsert must name _id in its filter or update (the store never invents ids)`);
    }
    assertId(doc._id, this.name);
    this.insert(doc as T);
    return doc as T;
  }

  /**
   * Applies an update to `current`, which this write decoded for itself, in place when `inPlace`
   * (saving a decode on every conditional write), or else to a fresh copy; returns the stored
   * document when it changed.
   */
  private modify(current: T, update: Update, inPlace: boolean): T | undefined {
    const id = idKey(current._id);
    const before = this.indexKeys(current);
    const next = inPlace ? current : this.fetch(current._id)!;
    if (!applyUpdate(next, update)) return undefined;
    if (idKey(next._id) !== id) throw immutableId();
    this.store(before, next);
    return next;
  }

  /** The index keys of a document, one per index (all null for none: an insert). */
  private indexKeys(doc: T | undefined): (IndexKey | null)[] {
    return this.indexes.map((index) => (doc ? documentKey(index, doc, this.name) : null));
  }

  /** Writes a document and moves its index entries from `oldKeys` (indexKeys of what it replaces), refusing unique-index duplicates first. */
  private store(oldKeys: (IndexKey | null)[], next: T): void {
    const id = idKey(next._id);
    const changes = this.indexes.map((index, i) => ({
      index,
      before: oldKeys[i] ?? null,
      after: documentKey(index, next, this.name),
    }));
    for (const { index, before, after } of changes) {
      if (index.unique && after && !sameKey(before, after) && this.taken(index, after, id)) {
        throw new DuplicateKeyError(this.name, index.name);
      }
    }
    for (const { index, before, after } of changes) {
      if (sameKey(before, after)) continue;
      if (before) index.db.remove(before, id);
      if (after) putIndexEntry(index, after, id);
    }
    this.docs.put(id, next);
  }

  private remove(doc: T): void {
    const id = idKey(doc._id);
    for (const index of this.indexes) {
      const key = documentKey(index, doc, this.name);
      if (key) index.db.remove(key, id);
    }
    this.docs.remove(id);
  }

  private taken(index: IndexState, key: IndexKey, id: Id): boolean {
    // Counted, not iterated: decoding dupSort values inside a write callback intermittently read
    // garbage (an lmdb-js shared-buffer issue), and whether another _id holds the key is all we need.
    const holders = index.db.getValuesCount(key);
    return holders > (index.db.doesExist(key, id) ? 1 : 0);
  }


  // ---- index definitions ----

  /** The name of an index already built for this spec; throws when the spec conflicts with one. */
  private existingIndex(def: StoredIndex): string | undefined {
    const sameName = this.indexes.find((i) => i.name === def.name);
    if (sameName) {
      if (isDeepStrictEqual(sameName.def, def)) return def.name;
      throw new Error(`${this.name}: index '${def.name}' already exists with different options`);
    }
    const sameKeys = this.indexes.find((i) => JSON.stringify(i.def.keys) === JSON.stringify(def.keys));
    if (sameKeys) throw new Error(`${this.name}: an index on the same keys already exists as '${sameKeys.name}'`);
    return undefined;
  }

  private openIndex(def: StoredIndex): IndexState {
    return this.indexState(def, this.openIndexDb(def.name));
  }

  private openIndexDb(name: string): Database<Id, IndexKey> {
    return this.ctx.env.openDB<Id, IndexKey>(JSON.stringify(['index', this.name, name]), {
      dupSort: true,
      encoding: 'ordered-binary',
    });
  }

  private indexState(def: StoredIndex, db: Database<Id, IndexKey>): IndexState {
    return { def, name: def.name, fields: Object.keys(def.keys), unique: def.unique, sparse: def.sparse, db };
  }

  /** Indexes the existing documents; a unique violation throws and aborts the whole build. */
  private build(index: IndexState): void {
    for (const { value: doc } of this.docs.getRange({})) {
      const key = documentKey(index, doc, this.name);
      if (!key) continue;
      if (index.unique && this.taken(index, key, idKey(doc._id))) throw new DuplicateKeyError(this.name, index.name);
      putIndexEntry(index, key, idKey(doc._id));
    }
  }
}

/**
 * The query operators only: mingo's default Query copies its whole operator table (hundreds of
 * expression operators) into every query it compiles, which cost ~18 µs a filter; with this
 * context a filter compiles in ~6 µs. Filters using `$expr` need the expression operators and get
 * mingo's full Query.
 */
const QUERY_CONTEXT = Context.init({ query: queryOperators, projection: projectionOperators } as unknown as Parameters<typeof Context.init>[0]);

/** The `_id` of a filter that is exactly `{ _id: <string or finite number> }`. */
function pointId(filter: Filter): Id | undefined {
  for (const key in filter) if (key !== '_id') return undefined;
  return scalarId(filter._id);
}

/** `value` when it is a string or a finite number (an `_id` a point lookup can use). */
function scalarId(value: unknown): Id | undefined {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? value : undefined;
}

/**
 * Whether an update carries objects (documents, arrays, Dates) that a stored document could share.
 * A `$pull`'s operand is a condition (`{$in: [...]}`), never stored.
 */
function sharesObjects(update: Update): boolean {
  for (const [op, expr] of Object.entries(update)) {
    if (op === '$pull' || expr === null || typeof expr !== 'object') continue;
    for (const operand of Object.values(expr)) if (operand !== null && typeof operand === 'object') return true;
  }
  return false;
}

function usesExpressions(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(usesExpressions);
  if (value === null || typeof value !== 'object' || value instanceof Date || value instanceof RegExp) return false;
  for (const [k, v] of Object.entries(value)) if (k === '$expr' || usesExpressions(v)) return true;
  return false;
}

function matcher(filter: Filter): (doc: Doc) => boolean {
  const fast = fastMatcher(filter);
  if (!fast) return mingoMatcher(filter);
  let slow: ((doc: Doc) => boolean) | undefined;
  return (doc) => fast(doc) ?? (slow ??= mingoMatcher(filter))(doc);
}

function mingoMatcher(filter: Filter): (doc: Doc) => boolean {
  // No `$where`/`$function`: in-process JavaScript from a filter would be code injection here.
  const query = usesExpressions(filter)
    ? new Query(filter, { scriptEnabled: false })
    : new BareQuery(filter, { context: QUERY_CONTEXT, scriptEnabled: false });
  return (doc) => query.test(doc);
}

function take<T>(docs: Iterable<T>, skip: number, limit: number): T[] {
  const out: T[] = [];
  if (limit <= 0) return out;
  let skipped = 0;
  for (const doc of docs) {
    if (skipped < skip) {
      skipped++;
      continue;
    }
    out.push(doc);
    if (out.length >= limit) break;
  }
  return out;
}

/** LMDB range options for `lo` (inclusive) .. `hi` (exclusive), walked either way. */
function rangeOptions(range: KeyRange, reverse: boolean) {
  if (!reverse) return { start: range.lo, end: range.hi };
  return { start: range.hi, end: range.lo, reverse: true, exclusiveStart: true, inclusiveEnd: true };
}

function putIndexEntry(index: IndexState, key: IndexKey, id: Id): void {
  try {
    index.db.put(key, id);
  } catch (err) {
    if (err instanceof Error && /key size/i.test(err.message)) {
      throw new Error(`index '${index.name}': the indexed values are too long for an LMDB key (about 1.9 KB)`);
    }
    throw err;
  }
}

function immutableId(): Error {
  return new Error("Performing an update on the path '_id' would modify the immutable field '_id'");
}

function normalizeIndex(spec: IndexSpec): StoredIndex {
  const entries = Object.entries(spec.keys);
  if (entries.length === 0) throw new Error('an index needs at least one field');
  for (const [field, dir] of entries) {
    if (field.length === 0 || field.startsWith('$')) throw new Error(`invalid index field '${field}'`);
    if (dir !== 1 && dir !== -1) throw new Error(`index direction for '${field}' must be 1 or -1`);
  }
  if (entries.length === 1 && entries[0]![0] === '_id' && entries[0]![1] === 1 && !spec.unique && !spec.sparse && spec.expireAfterSeconds === undefined) {
    return { name: '_id_', keys: spec.keys, unique: true, sparse: false };
  }
  const def: StoredIndex = { name: indexName(spec), keys: { ...spec.keys }, unique: spec.unique ?? false, sparse: spec.sparse ?? false };
  if (spec.expireAfterSeconds !== undefined) {
    if (entries.length !== 1) throw new Error('a TTL index (expireAfterSeconds) must have exactly one field');
    if (!(spec.expireAfterSeconds >= 0)) throw new Error('expireAfterSeconds must be a non-negative number');
    def.expireAfterSeconds = spec.expireAfterSeconds;
  }
  return def;
}
