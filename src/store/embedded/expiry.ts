// The embedded store's TTL monitor, as MongoDB's: every `ttlSweepMs` (60 s by default) it deletes
// the documents whose TTL index's Date is older than its `expireAfterSeconds`, each collection's in
// bounded batches (each batch one write of the collection: collection.ts `expire`). Nothing relies
// on it for correctness: queries compare times themselves.

import type { Database } from 'lmdb';
import type { MetaKey, StoredIndex } from './indexes.ts';

/** Documents deleted per TTL transaction, so a large expiry never holds the write lock for long. */
const TTL_BATCH = 1000;

/** What the sweep asks of a collection (collection.ts `EmbeddedCollection`). */
export interface ExpiringCollection {
  /** Deletes up to `batch` documents whose indexed Date is at or before `cutoffMs`; resolves to how many. */
  expire(indexName: string, cutoffMs: number, batch: number): Promise<number>;
}

export class TtlSweep {
  private readonly timer: NodeJS.Timeout;
  private sweeping: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly meta: Database<StoredIndex[], MetaKey>,
    private readonly collection: (name: string) => ExpiringCollection,
    ttlSweepMs: number,
    private readonly onError: (err: unknown) => void,
  ) {
    this.timer = setInterval(() => this.startSweep(), ttlSweepMs);
    this.timer.unref();
  }

  /** No sweep starts from now on; resolves once the one running (if any) has stopped. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.sweeping;
  }

  private startSweep(): void {
    if (this.sweeping || this.stopped) return;
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
      const c = this.collection(collection);
      const cutoff = Date.now() - seconds * 1000;
      let removed = TTL_BATCH;
      while (removed === TTL_BATCH && !this.stopped) {
        removed = await c.expire(index, cutoff, TTL_BATCH);
      }
    }
  }
}
