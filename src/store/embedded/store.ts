// The default store: one node, LMDB for storage and mingo for MongoDB's query and update semantics
// (with fast paths for the simple filters and updates of hot writes: fastpath.ts). This file opens
// it and hands out its collections; the rest of the folder is the collection and its parts.
//
// Layout of the one LMDB environment in `dir`:
// - `["docs", collection]`: `_id` -> document (msgpack; Dates round-trip as Dates);
// - `["index", collection, name]`: dupSort, index key (see keys.ts) -> `_id`;
// - `meta`: `["indexes", collection]` -> the collection's index specs, so indexes survive restarts.
//
// A collection (collection.ts) is one object built in layers: indexes.ts (its documents and the
// upkeep of their index entries), query.ts (reads), writes.ts (the write pipeline: group commit,
// durable and lazy writes, the lazy point writes' overlay; says when a write's promise resolves)
// and collection.ts (the `Collection` API). The TTL sweep is expiry.ts; the environment and the
// overlays shared by every store instance on one directory are directory.ts.

import { open, type Database, type RootDatabase } from 'lmdb';
import { mkdirSync } from 'node:fs';
import type { Collection, Doc, Store } from '../port.ts';
import { EmbeddedCollection } from './collection.ts';
import { acquireDirectory, type Directory } from './directory.ts';
import { TtlSweep } from './expiry.ts';
import type { MetaKey, StoreContext, StoredIndex } from './indexes.ts';

export interface EmbeddedStoreOptions {
  dir: string;
  /** How often TTL indexes are swept (default 60 s, like MongoDB's TTL monitor). */
  ttlSweepMs?: number;
  /** LMDB map size; lmdb-js grows the map by itself when this is not set. */
  mapSizeBytes?: number;
  /** Told about a failed TTL sweep, and when commits start failing (once, until they commit again); by default dropped. */
  onError?: (err: unknown) => void;
}

/** Sub-databases per environment: a collection takes one plus one per index. */
const MAX_DBS = 512;
/** How long close() keeps trying to commit the lazy writes a failed commit left. */
export const CLOSE_DRAIN_MS = 3000;

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

class EmbeddedStore implements Store {
  readonly kind = 'embedded' as const;
  private readonly meta: Database<StoredIndex[], MetaKey>;
  private readonly collections = new Map<string, EmbeddedCollection<Doc>>();
  private readonly ttl: TtlSweep;
  private closed = false;
  private readonly env: RootDatabase;

  constructor(
    private readonly directory: Directory,
    ttlSweepMs: number,
    private readonly onError: (err: unknown) => void,
  ) {
    this.env = directory.env;
    this.meta = this.env.openDB<StoredIndex[], MetaKey>('meta', {});
    this.ttl = new TtlSweep(this.meta, (name) => this.collectionState(name), ttlSweepMs, onError);
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    this.assertOpen();
    // One object per name serves every `T`: the type is the caller's word for what the collection
    // holds, as with the driver's `db.collection<T>(name)`.
    return this.collectionState(name) as Collection<T>;
  }

  async ping(): Promise<void> {
    this.assertOpen();
    this.directory.failures.assertCommitting();
    this.env.getStats();
  }

  failing(): boolean {
    return this.directory.failures.since !== null;
  }

  /**
   * Writes what was acknowledged. While commits fail (a full disk), the lazy writes a failed commit
   * left are tried again for up to CLOSE_DRAIN_MS; what still does not commit is lost, as in a
   * crash (reported: commit-failures.ts).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.ttl.stop();
    const failures = this.directory.failures;
    if (failures.kept > 0 && !(await failures.drain(CLOSE_DRAIN_MS)))
      this.onError(
        new Error(
          `closing while writes still fail to commit: the acknowledged lazy writes of ${failures.kept} documents (wallets' last holds and settles) are lost, as in a crash`,
        ),
      );
    await this.directory.release();
  }

  /** A commit failed: reported once per failure (commit-failures.ts says what the store does). */
  private commitFailed(err: unknown): void {
    if (this.directory.failures.failed()) this.onError(err);
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
        commitFailed: (err) => this.commitFailed(err),
      };
      c = new EmbeddedCollection<Doc>(name, ctx);
      this.collections.set(name, c);
    }
    return c;
  }
}
