// The store port: the one persistence boundary of the gateway.
//
// It is a deliberately small subset of the official MongoDB driver's Collection API, with the same
// method names, filter/update documents and result shapes, so that the MongoDB adapter stays a thin,
// obviously faithful layer over the driver, and the embedded adapter (LMDB + mingo) reproduces the
// same semantics on one node. One contract suite (test/store/contract.ts) runs against both.
//
// Conventions every caller follows (and the contract suite checks):
// - Every document carries its own `_id` (a number or a string); adapters never invent one for
//   inserts. An upsert whose filter names `_id` creates the document with that `_id`; an upsert
//   must name `_id` (in its filter, or via `$set`/`$setOnInsert`): the embedded adapter refuses one
//   that does not, where MongoDB would invent an ObjectId.
// - Timestamps are `Date` objects in documents (so MongoDB TTL indexes work); the API layer turns
//   them into ISO strings.
// - Indexed fields hold scalars (string, number, boolean, Date or null): no arrays in indexes.
// - Correctness never depends on TTL deletion: queries compare times themselves (TTL is cleanup).

export type Id = string | number;
export type Doc = { _id: Id } & Record<string, unknown>;

/** A MongoDB query document (`{field: value}`, `$eq`, `$gt`, `$in`, `$or`, ...). */
export type Filter = Record<string, unknown>;
/** A MongoDB update document made of operators (`$set`, `$inc`, `$unset`, `$setOnInsert`, `$push`, ...). */
export type Update = Record<string, unknown>;
/** `{field: 1 | -1}` in priority order. */
export type Sort = Record<string, 1 | -1>;
/** `{field: 1}` to include or `{field: 0}` to exclude, as MongoDB. */
export type Projection = Record<string, 0 | 1>;

export interface FindOptions {
  sort?: Sort;
  limit?: number;
  skip?: number;
  projection?: Projection;
}

/**
 * The driver's per-operation write concern, reduced to the one choice callers make. By default a
 * write is acknowledged once it is durable: the embedded store flushes it to disk first (writes
 * in flight together share one flush); on MongoDB it follows the deployment's write concern (set
 * `journal=true` in the connection string for the same guarantee). `j: false` acknowledges once
 * the write is applied: later writes and reads see it (a read on the embedded store waits for the
 * write's commit, about a millisecond, so what it shows is on disk; MongoDB shows it at once), and
 * a crash before it reaches the disk loses it. Use it only where losing the last moments of writes
 * to a crash is acceptable and nobody is told of them otherwise than by a read (a hold, a settle,
 * a per-key RPM counter).
 */
export interface WriteOptions {
  writeConcern?: { j?: boolean };
}

export interface UpdateOptions extends WriteOptions {
  upsert?: boolean;
}

export interface FindOneAndUpdateOptions extends WriteOptions {
  upsert?: boolean;
  /** Default 'after' here (the driver's default is 'before'; adapters pass it explicitly). */
  returnDocument?: 'before' | 'after';
  sort?: Sort;
  projection?: Projection;
}

export interface UpdateResult {
  matchedCount: number;
  modifiedCount: number;
  upsertedId: Id | null;
}

export interface DeleteResult {
  deletedCount: number;
}

export interface IndexSpec {
  /** Fields in order, with direction. */
  keys: Record<string, 1 | -1>;
  /** A stable name; defaults to the driver's naming (`a_1_b_-1`). */
  name?: string;
  unique?: boolean;
  /**
   * Documents missing every indexed field are left out of the index (and out of uniqueness), as
   * MongoDB's sparse indexes; an explicit null is indexed. Without `sparse`, a missing field counts
   * as null, so two documents missing a uniquely indexed field collide.
   */
  sparse?: boolean;
  /**
   * TTL: a document whose (single, Date) indexed field is older than now - expireAfterSeconds is
   * deleted by a background sweep (MongoDB: about every 60 s; embedded: `ttlSweepMs`).
   */
  expireAfterSeconds?: number;
}

export interface Collection<T extends Doc = Doc> {
  readonly name: string;
  /** Throws DuplicateKeyError when a unique index (or `_id`) would be violated. */
  insertOne(doc: T, options?: WriteOptions): Promise<{ insertedId: Id }>;
  /**
   * Inserts a batch in one write (one commit on the embedded store). Ordered (the default) stops at
   * the first duplicate; unordered inserts every other document. Either way a duplicate throws
   * DuplicateKeyError after the rest was written, with `insertedCount` set, as the driver's
   * MongoBulkWriteError does.
   */
  insertMany(docs: T[], options?: { ordered?: boolean } & WriteOptions): Promise<{ insertedCount: number }>;
  findOne(filter: Filter, options?: Omit<FindOptions, 'limit' | 'skip'>): Promise<T | null>;
  /** Returns the matching documents as an array; pass `limit` for anything that can grow. */
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  countDocuments(filter: Filter): Promise<number>;
  /** Atomic: the filter is evaluated and the update applied as one step (conditional updates). */
  updateOne(filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>;
  updateMany(filter: Filter, update: Update): Promise<UpdateResult>;
  findOneAndUpdate(filter: Filter, update: Update, options?: FindOneAndUpdateOptions): Promise<T | null>;
  /** Replaces the whole document (keeping `_id`); atomic like updateOne. */
  replaceOne(filter: Filter, doc: T, options?: UpdateOptions): Promise<UpdateResult>;
  deleteOne(filter: Filter, options?: WriteOptions): Promise<DeleteResult>;
  deleteMany(filter: Filter): Promise<DeleteResult>;
  findOneAndDelete(filter: Filter, options?: { sort?: Sort } & WriteOptions): Promise<T | null>;
  /** Idempotent: creating an index that exists with the same spec is a no-op. */
  createIndex(spec: IndexSpec): Promise<string>;
}

export interface Store {
  /** 'embedded' or 'mongodb', for logs and /readyz. */
  readonly kind: 'embedded' | 'mongodb';
  collection<T extends Doc = Doc>(name: string): Collection<T>;
  /** Resolves when the store answers; rejects otherwise (the embedded store: also while it is failing). */
  ping(): Promise<void>;
  /**
   * Whether the store refuses writes now (the embedded store: a commit failed, as on a full disk,
   * and no write has committed since). Billing takes no hold meanwhile. Optional: MongoDB's writes
   * fail one by one, each heard by its caller.
   */
  failing?(): boolean;
  /**
   * Optional (MongoDB only: a change stream, which needs a replica set): calls `listener` with the
   * `_id` and operation of every insert or update in `collection`. `onError` hears why the stream
   * stopped (no replica set, connection lost); callers keep a polling fallback either way.
   * Returns the stop function.
   */
  watch?(collection: string, listener: (change: StoreChange) => void, onError: (err: unknown) => void): () => Promise<void>;
  /** Flushes what was acknowledged and releases files or connections. */
  close(): Promise<void>;
}

/** One change seen by `Store.watch`; `doc` is the inserted document (inserts only). */
export interface StoreChange {
  op: 'insert' | 'update';
  id: Id;
  doc?: Doc;
}

/** Raised by both adapters for unique-index violations (MongoDB's error code 11000). */
export class DuplicateKeyError extends Error {
  readonly code = 11000;
  /** For insertMany: how many documents were written before (ordered) or besides (unordered) it. */
  insertedCount = 0;
  constructor(
    readonly collection: string,
    readonly index: string,
  ) {
    super(`duplicate key in ${collection} for index ${index}`);
    this.name = 'DuplicateKeyError';
  }
}

export function isDuplicateKeyError(err: unknown): err is DuplicateKeyError {
  return err instanceof DuplicateKeyError;
}

/**
 * Raised by the embedded store for a write through a transaction while its commits fail (a full
 * disk: embedded/commit-failures.ts), at once rather than queued behind a commit that cannot
 * succeed; the HTTP edge answers 503 `store_unavailable`.
 */
export class StoreUnavailableError extends Error {
  constructor(readonly since: number) {
    super(`the store's writes fail to commit (a full disk?) since ${new Date(since).toISOString()}`);
    this.name = 'StoreUnavailableError';
  }
}

/**
 * Raised by both adapters, before any I/O, for a string `_id` (in a document, a filter or an
 * upsert) that is not well-formed UTF-16 or holds a NUL (src/store/key-strings.ts says why); the
 * embedded store raises it too for such a string in an indexed field.
 */
export class InvalidKeyError extends Error {
  constructor(
    readonly collection: string,
    readonly field: string,
  ) {
    super(`${collection}: ${field} must be a string of well-formed UTF-16 without NUL characters`);
    this.name = 'InvalidKeyError';
  }
}

/** The driver's default index name: `field_1_other_-1`. */
export function indexName(spec: IndexSpec): string {
  return (
    spec.name ??
    Object.entries(spec.keys)
      .map(([k, d]) => `${k}_${d}`)
      .join('_')
  );
}
