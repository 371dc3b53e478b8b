// A collection's documents and their indexes (the bottom layer of the embedded collection): the
// `["docs", collection]` database, the `["index", collection, name]` databases and the index specs
// kept in `meta`, and the upkeep every write does inside its transaction: storing or removing a
// document moves its index entries with it, refusing a unique-index duplicate before anything is
// written, so a document and its index entries never disagree. Also the index definitions
// (normalizing a spec, building a new index over the existing documents).
//
// The collection is one object built in layers, each a class extending the one below (this file,
// then query.ts for reads, writes.ts for the write pipeline and collection.ts for the `Collection`
// API), so that every call between the layers stays a plain method call on the same object, as it
// was when they were one class (the hot path's hold and settle take no extra step).

import type { Database, RootDatabase } from 'lmdb';
import { isDeepStrictEqual } from 'node:util';
import { DuplicateKeyError, indexName, type Doc, type Id, type IndexSpec } from '../port.ts';
import type { Directory } from './directory.ts';
import { documentKey, idKey, sameKey, type IndexKey } from './keys.ts';
import type { Overlay } from './overlay.ts';

export interface StoredIndex {
  name: string;
  keys: Record<string, 1 | -1>;
  unique: boolean;
  sparse: boolean;
  expireAfterSeconds?: number;
}

export interface IndexState {
  readonly def: StoredIndex;
  readonly name: string;
  readonly fields: readonly string[];
  readonly unique: boolean;
  readonly sparse: boolean;
  readonly db: Database<Id, IndexKey>;
}

export type MetaKey = [string, string];

/** What a collection needs from its store. */
export interface StoreContext {
  readonly env: RootDatabase;
  /** Its lazy point writes not committed yet (overlay.ts). */
  readonly overlay: Overlay;
  /** Where lazy point writes' flushes wait (shared by every store instance on the directory). */
  readonly directory: Directory;
  onError(err: unknown): void;
  /** A commit failed (a full disk, an I/O error): the store refuses holds until a write commits again (store.ts). */
  commitFailed(err: unknown): void;
  readonly meta: Database<StoredIndex[], MetaKey>;
  assertOpen(): void;
}

export abstract class IndexedDocuments<T extends Doc> {
  protected readonly docs: Database<T, Id>;
  protected indexes: IndexState[];
  /** The overlay's indexGeneration when adoptNewIndexes last read the stored list. */
  private indexesSeen = -1;
  /** Lazy point writes not committed yet, and what else is in flight (overlay.ts). */
  protected readonly overlay: Overlay;

  constructor(
    readonly name: string,
    protected readonly ctx: StoreContext,
  ) {
    if (name.length === 0 || name.length > 200) throw new Error(`invalid collection name '${name}'`);
    // Shared msgpack structures: each document shape's field names are stored once per collection
    // instead of inline in every document, which makes a point read ~3x faster (1.3 vs 3.9 µs for a
    // wallet). Documents written before are still read; ones written with it need it to be read.
    // Kept across a failed commit (structures.ts).
    this.docs = ctx.directory.structures.open<T, Id>(JSON.stringify(['docs', name]));
    this.overlay = ctx.overlay;
    this.indexes = (ctx.meta.get(['indexes', name]) ?? []).map((def) => this.openIndex(def));
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
  protected adoptNewIndexes(inTransaction: boolean): void {
    const generation = this.overlay.indexGeneration;
    if (generation === this.indexesSeen) return;
    if (inTransaction) this.indexesSeen = generation;
    const stored = this.ctx.meta.get(['indexes', this.name]) ?? [];
    if (stored.length === this.indexes.length) return;
    this.indexes = stored.map((def) => this.indexes.find((i) => i.name === def.name) ?? this.openIndex(def));
  }

  protected fetch(id: Id): T | undefined {
    return this.docs.get(idKey(id));
  }

  protected insert(doc: T): void {
    if (this.docs.doesExist(idKey(doc._id))) throw new DuplicateKeyError(this.name, '_id_');
    this.store(this.indexKeys(undefined), doc);
  }

  /** The index keys of a document, one per index (all null for none: an insert). */
  protected indexKeys(doc: T | undefined): (IndexKey | null)[] {
    return this.indexes.map((index) => (doc ? documentKey(index, doc, this.name) : null));
  }

  /** Writes a document and moves its index entries from `oldKeys` (indexKeys of what it replaces), refusing unique-index duplicates first. */
  protected store(oldKeys: (IndexKey | null)[], next: T): void {
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

  protected remove(doc: T): void {
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
  protected existingIndex(def: StoredIndex): string | undefined {
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

  protected openIndexDb(name: string): Database<Id, IndexKey> {
    return this.ctx.env.openDB<Id, IndexKey>(JSON.stringify(['index', this.name, name]), {
      dupSort: true,
      encoding: 'ordered-binary',
    });
  }

  protected indexState(def: StoredIndex, db: Database<Id, IndexKey>): IndexState {
    return { def, name: def.name, fields: Object.keys(def.keys), unique: def.unique, sparse: def.sparse, db };
  }

  /** Indexes the existing documents; a unique violation throws and aborts the whole build. */
  protected build(index: IndexState): void {
    for (const { value: doc } of this.docs.getRange({})) {
      const key = documentKey(index, doc, this.name);
      if (!key) continue;
      if (index.unique && this.taken(index, key, idKey(doc._id))) throw new DuplicateKeyError(this.name, index.name);
      putIndexEntry(index, key, idKey(doc._id));
    }
  }
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

/** The stored definition of an index spec, as MongoDB normalizes it (`{_id: 1}` is the `_id_` index); throws for an invalid one. */
export function normalizeIndex(spec: IndexSpec): StoredIndex {
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
