// The embedded store's `Collection` (port.ts), the top layer of the collection over writes.ts,
// query.ts and indexes.ts: the driver's entry points, each checking its arguments, then reading
// the latest committed snapshot (after any lazy write in flight has committed) or running as one
// write of the pipeline, with the document-level steps a write takes inside its transaction.

import { resolve } from 'mingo/util';
import { isDeepStrictEqual } from 'node:util';
import {
  DuplicateKeyError,
  StoreUnavailableError,
  type Collection,
  type DeleteResult,
  type Doc,
  type Filter,
  type FindOneAndUpdateOptions,
  type FindOptions,
  type Id,
  type IndexSpec,
  type Sort,
  type Update,
  type UpdateOptions,
  type UpdateResult,
  type WriteOptions,
} from '../port.ts';
import { checkIds } from '../key-strings.ts';
import { applyUpdate, assertReplacement, assertUpdate, buildUpsert, cloneDoc, project, replacement } from './documents.ts';
import { upsertSeed } from './filter.ts';
import { normalizeIndex } from './indexes.ts';
import { AFTER, TAG, assertId, idKey } from './keys.ts';
import { planQuery } from './plan.ts';
import { pointId } from './query.ts';
import { WritePipeline, sharesObjects } from './writes.ts';

export class EmbeddedCollection<T extends Doc> extends WritePipeline<T> implements Collection<T> {
  // ---- reads: synchronous LMDB reads on the latest committed snapshot ----

  async findOne(filter: Filter, options: Omit<FindOptions, 'limit' | 'skip'> = {}): Promise<T | null> {
    checkIds(this.name, { filter });
    this.ctx.assertOpen();
    if (this.overlay.lazyCommit) await this.lazyCommitted();
    const kept = this.keptDocs();
    // `{ _id: v }` alone, the most common read (keys, accounts, models, wallets): a point lookup.
    const id = options.sort || options.projection ? undefined : pointId(filter);
    if (id !== undefined) {
      const doc = kept?.get(idKey(id));
      return doc ? cloneDoc(doc) : (this.docs.get(idKey(id)) ?? null);
    }
    const [doc] = kept ? this.selectKept(kept, filter, options.sort, 0, 1) : this.select(filter, options.sort, 0, 1);
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
    const kept = this.keptDocs();
    return project(kept ? this.selectKept(kept, filter, options.sort, skip, limit) : this.select(filter, options.sort, skip, limit), options.projection);
  }

  async countDocuments(filter: Filter): Promise<number> {
    checkIds(this.name, { filter });
    this.ctx.assertOpen();
    if (this.overlay.lazyCommit) await this.lazyCommitted();
    const kept = this.keptDocs();
    if (!kept && Object.keys(filter).length === 0) return this.docs.getCount();
    let n = 0;
    for (const doc of this.matches(filter, planQuery(filter, undefined, this.indexes))) if (!kept?.has(idKey(doc._id))) n++;
    if (kept) n += this.keptMatching(kept, filter).length;
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
    const counts = (lazy: { modified: boolean } | null) => ({ matchedCount: lazy ? 1 : 0, modifiedCount: lazy?.modified ? 1 : 0, upsertedId: null });
    const lazy = this.lazyUpdate(options, filter, update);
    if (lazy !== undefined) return counts(lazy);
    const result = await this.write(
      options,
      () => {
        const current = this.first(filter);
        if (current) return { matchedCount: 1, modifiedCount: this.modify(current, update, true) ? 1 : 0, upsertedId: null };
        if (!options.upsert) return { matchedCount: 0, modifiedCount: 0, upsertedId: null };
        return { matchedCount: 0, modifiedCount: 0, upsertedId: this.upsert(buildUpsert(filter, update))._id };
      },
      this.replayer(options, filter, update),
    ).catch((err: unknown) => this.lateLazy(err, options, filter, update));
    return result instanceof LateLazy ? counts(result.outcome) : result;
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
    // Projected first, so a long list the caller left out is not copied.
    const answer = (lazy: { before: T; after: T } | null) => (lazy ? cloneDoc(project([after ? lazy.after : lazy.before], options.projection)[0]!) : null);
    const lazy = this.lazyUpdate(options, filter, update);
    if (lazy !== undefined) return answer(lazy);
    const doc = await this.write(
      options,
      () => {
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
      },
      this.replayer(options, filter, update),
    ).catch((err: unknown) => this.lateLazy(err, options, filter, update));
    if (doc instanceof LateLazy) return answer(doc.outcome);
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

  /** TTL (the sweep: expiry.ts): deletes up to `batch` documents whose indexed Date is at or before `cutoffMs`; resolves to how many. */
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

  private lazyUpdate(options: UpdateOptions, filter: Filter, update: Update) {
    return options.writeConcern?.j === false ? this.lazyPointUpdate(filter, update, options.upsert ?? false) : undefined;
  }

  /**
   * A lazy update the transaction path refused because commits fail (queued before the failure was
   * known, run after): applied to the overlay instead when it can be (commit-failures.ts), so a call
   * in flight still settles; any other error is rethrown.
   */
  private lateLazy(err: unknown, options: UpdateOptions, filter: Filter, update: Update): LateLazy<T> {
    const lazy = err instanceof StoreUnavailableError ? this.lazyUpdate(options, filter, update) : undefined;
    if (lazy === undefined) throw err;
    return new LateLazy(lazy);
  }

  /** For a lazy update through a transaction: how to apply it again if its commit fails (writes.ts replayUpdate). */
  private replayer(options: UpdateOptions, filter: Filter, update: Update): (() => void) | undefined {
    return options.writeConcern?.j === false ? () => this.replayUpdate(filter, update, options.upsert ?? false) : undefined;
  }

  // ---- document steps inside a write's transaction ----

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
}

/** A lazy point update's outcome (writes.ts lazyPointUpdate) where a transaction's result was due; null: no match. */
class LateLazy<T> {
  constructor(readonly outcome: { before: T; after: T; modified: boolean } | null) {}
}

function immutableId(): Error {
  return new Error("Performing an update on the path '_id' would modify the immutable field '_id'");
}
