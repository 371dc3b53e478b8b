// Lazy point writes of the embedded store: what lets a `writeConcern: { j: false }` update of one
// document named by `_id` (a wallet's hold or settle) be decided and acknowledged at once, in
// memory, instead of waiting for its turn in LMDB's write queue (behind the commit and fsync of the
// batch before it: the metered path's main wait). The collection (writes.ts) keeps, per
// document with such writes not yet committed, the document as they left it (`PendingDoc`), and
// queues one write of it (after up to FLUSH_DELAY_MS, 2 ms, or at once when another write or a read
// comes) into a batch; every lazy write to it before that batch runs joins the same write, so a
// call's hold and settle, or 50 calls' in one batch, are encoded and stored once.
//
// The invariant that keeps this exact: while a pending document exists, LMDB's latest state of it
// is its pending version as of its last queued flush, and no other write to the collection is in
// flight. So:
// - a lazy point write is applied to the pending version (or the committed one) only when no write
//   through an LMDB transaction is in flight on the collection (`txnWrites`); otherwise it takes
//   that path itself, queued behind the others, as before;
// - a write through a transaction, when its callback runs, finds every pending document flushed
//   before it (their flushes were queued first, or committed); each is dropped once its own flush
//   has committed (in the transaction's batch or before it), and none changes meanwhile;
// - reads wait for the latest flush's commit (`lazyCommit`), as they waited for lazy writes before,
//   so what a read shows is on disk;
// - a flush whose commit fails (a full disk) leaves its document here, marked `failed`: reads show
//   it in place of LMDB's older version, and it is written again until it commits
//   (commit-failures.ts). Meanwhile transactions are refused, so nothing is written over the
//   acknowledged state, and lazy point writes no longer wait for transactions in flight (all of
//   those fail): a call in flight still settles.
// The state is shared by every store instance of one process on one directory (tests open two),
// with the LMDB environment itself (directory.ts). Several processes writing one directory at once
// are not supported by the embedded store (one node; MongoDB is for several).

import type { Doc, Id } from '../port.ts';

export interface PendingDoc {
  /** The document after the latest lazy write (never mutated: each write stores a new object). */
  doc: Doc;
  /** Bumped by every lazy write; the flush that wrote the latest version removes the entry once committed. */
  version: number;
  /** A flush of this document is queued and has not run yet. */
  queued: boolean;
  /**
   * Its latest flush's commit failed (a full disk): reads see this version rather than LMDB's older
   * one, and it is written again until it commits (commit-failures.ts).
   */
  failed?: boolean;
}

export interface Overlay {
  /** By index key of `_id` (keys.ts `idKey`). */
  readonly pending: Map<Id, PendingDoc>;
  /** Writes through LMDB transactions issued on the collection and not settled yet. */
  txnWrites: number;
  /** Settles when the latest lazy write of the collection has committed; unset when none is in flight. */
  lazyCommit: Promise<void> | undefined;
  /**
   * Bumped when an instance changes the collection's stored index list (inside the transaction,
   * and again once it committed or failed), so the others re-read the list only then.
   */
  indexGeneration: number;
}
