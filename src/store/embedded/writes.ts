// The embedded collection's write pipeline (its third layer, over query.ts and indexes.ts): how a
// write reaches LMDB, and when its promise resolves.
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
// 2 ms later: directory.ts FLUSH_DELAY_MS) however many such writes it took (overlay.ts
// says when this path applies and why it stays exact); any other lazy write resolves once its
// callback has applied it inside its batch. A lazy write whose commit fails (a full disk) is kept
// and written again until it commits, and transactions are refused meanwhile (commit-failures.ts).
// Reads see lazy writes too:
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

import type { Doc, Filter, Id, Update, WriteOptions } from '../port.ts';
import { applyUpdate, buildUpsert, cloneDoc } from './documents.ts';
import { documentKey, idKey, sameKey } from './keys.ts';
import type { PendingDoc } from './overlay.ts';
import { isCommitFailure } from './commit-failures.ts';
import { QueryableDocuments, matcher, scalarId } from './query.ts';

export abstract class WritePipeline<T extends Doc> extends QueryableDocuments<T> {
  /** Settles when the latest lazy write of the collection has committed (its flush queued now if deferred). */
  protected lazyCommitted(): Promise<void> | undefined {
    this.ctx.directory.flushDeferred();
    return this.overlay.lazyCommit;
  }

  /**
   * Runs `fn` as one transaction of the next batch. `replay`, for a lazy write, applies it again to
   * the overlay if its commit fails after it was acknowledged (a lazy point update: replayUpdate).
   */
  protected write<R>(options: WriteOptions, fn: () => R, replay?: () => void): Promise<R> {
    this.ctx.assertOpen();
    const failures = this.ctx.directory.failures;
    try {
      failures.assertCommitting(); // refused at once, not queued behind a commit that cannot succeed
    } catch (err) {
      return Promise.reject(err);
    }
    this.ctx.directory.flushDeferred();
    const overlay = this.overlay;
    const run = (): R => {
      // Queued before a commit failed, run after it was known: refused, so nothing is built on a
      // state that lacks the failed batch's acknowledged writes (they are still in the overlay).
      failures.assertCommitting();
      // Every pending lazy point write was flushed before this transaction (its flush was queued
      // first, and none is applied while this one is in flight): LMDB now has them all, and each
      // leaves the overlay once its flush has committed.
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
      done.then(settled, (err: unknown) => {
        settled();
        if (isCommitFailure(err)) this.ctx.commitFailed(err); // the caller hears it too
      });
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
            if (!applied) return;
            this.ctx.commitFailed(err);
            if (replay) replay();
            else this.ctx.onError(new Error(`${this.name}: a lazy write (not a point update) was lost with a failed commit`));
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
   * (overlay.ts). Resolves to the document before and after, or null when the filter does
   * not match; undefined when the write must go through a transaction instead: another write of the
   * collection is in flight, the filter names no single `_id`, the update would share objects with
   * the stored document, change a unique index's key or `_id`, insert (upsert), or fails (the
   * transaction path then reports the error as usual).
   */
  protected lazyPointUpdate(filter: Filter, update: Update, upsert: boolean): { before: T; after: T; modified: boolean } | null | undefined {
    this.ctx.assertOpen();
    const overlay = this.overlay;
    const id = scalarId(filter._id);
    // While commits fail, every transaction in flight fails too (commit-failures.ts): a settle need not wait for them.
    const txnsInFlight = overlay.txnWrites > 0 && this.ctx.directory.failures.since === null;
    if (txnsInFlight || id === undefined || sharesObjects(update)) return undefined;
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

  /**
   * A lazy update acknowledged through a transaction whose commit then failed: applied again, to the
   * document's latest acknowledged version, in the overlay, and written until it commits. Only a
   * write acknowledged before it and refused with the batch (a durable one) could make it differ
   * from what its caller was told: it is then reported, not guessed.
   */
  protected replayUpdate(filter: Filter, update: Update, upsert: boolean): void {
    const id = scalarId(filter._id);
    const key = id === undefined ? undefined : idKey(id);
    const entry = key === undefined ? undefined : this.overlay.pending.get(key);
    const current = (entry ? entry.doc : key === undefined ? undefined : this.docs.get(key)) as T | undefined;
    let next: T | undefined;
    try {
      if (current && matcher(filter)(current)) {
        next = cloneDoc(current);
        if (!applyUpdate(next, update)) return;
      } else if (!current && upsert) next = buildUpsert(filter, update) as T;
    } catch {
      next = undefined;
    }
    if (key === undefined || next === undefined) {
      this.ctx.onError(new Error(`${this.name}: a lazy update acknowledged before a failed commit no longer applies; lost`));
      return;
    }
    const pending: PendingDoc = entry ?? { doc: next, version: 0, queued: false };
    pending.doc = next;
    pending.version++;
    if (!entry) this.overlay.pending.set(key, pending);
    this.ctx.directory.failures.keep(pending, () => this.queueFlush(key, pending));
  }

  /** Queues the write of a pending document into the next batch: whatever version it has when the batch runs. */
  private queueFlush(key: Id, pending: PendingDoc): void {
    const overlay = this.overlay;
    const failures = this.ctx.directory.failures;
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
            failures.forget(pending);
            if (overlay.pending.get(key) === pending && pending.version === flushed) overlay.pending.delete(key);
          },
          (err: unknown) => {
            if (overlay.pending.get(key) === pending && isCommitFailure(err)) {
              // Already acknowledged: kept (reads see it) and written again until it commits.
              this.ctx.commitFailed(err);
              failures.keep(pending, () => this.queueFlush(key, pending));
              return;
            }
            // It can never be written (an index refused it): reported, not retried forever.
            if (overlay.pending.get(key) === pending) overlay.pending.delete(key);
            failures.forget(pending);
            this.ctx.onError(err);
          },
        )
        .then(committed);
    });
  }
}

/**
 * Whether an update carries objects (documents, arrays, Dates) that a stored document could share.
 * A `$pull`'s operand is a condition (`{$in: [...]}`), never stored.
 */
export function sharesObjects(update: Update): boolean {
  for (const [op, expr] of Object.entries(update)) {
    if (op === '$pull' || expr === null || typeof expr !== 'object') continue;
    for (const operand of Object.values(expr)) if (operand !== null && typeof operand === 'object') return true;
  }
  return false;
}
