// What a failed LMDB commit looks like (a full disk, an I/O error), and the store's answer to one.
// lmdb-js rejects every write of the failed batch with "Commit failed" (its `commitError` a promise
// of the cause), and also rejects promises of its own that nobody awaits: the batch's commit promise
// and that `commitError`. Left alone, those would end the process on Node's unhandled rejection, so a
// full disk would take the gateway down; src/server.ts lets them pass (isCommitFailure) and the store
// answers the failure itself:
// - it says it is failing (Store.failing, /readyz 503) from the failed commit until every write it
//   acknowledged has committed, and billing refuses new holds meanwhile with 503 `store_unavailable`
//   (fail closed: no call is served that could not be recorded);
// - the lazy writes the failed batch carried, already acknowledged (a wallet's holds and settles),
//   stay in the overlay (overlay.ts: reads see them) and are written again, after RETRY_FIRST_MS and
//   then twice as long each time up to RETRY_MAX_MS, until they commit: once space returns, each is
//   committed exactly once (a write stores the document's whole latest state, so a repeat is harmless);
// - writes through a transaction (durable ones, and lazy ones that are not a point update) are refused
//   at once with StoreUnavailableError while it fails, never queued behind a commit that cannot
//   succeed; a lazy point update is still applied to the overlay (a call in flight settles).
// The failure is learned synchronously, from lmdb-js's `aftercommit` event (no transaction id: the
// commit failed), before the callbacks of the next batch run: a transaction queued before the failure
// was known cannot then build on a state that lacks the failed batch's acknowledged writes.

import type { RootDatabase } from 'lmdb';
import { StoreUnavailableError } from '../port.ts';
import type { PendingDoc } from './overlay.ts';

/** The first retry of a failed batch's lazy writes, then twice as long each time up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 50;
export const RETRY_MAX_MS = 1000;

/** Whether `err` is lmdb-js's "Commit failed" (a write of a batch whose commit failed). */
export function isCommitFailure(err: unknown): boolean {
  if (!(err instanceof Error) || !('commitError' in err)) return false;
  // The cause, which lmdb-js rejects separately: heard here, so it is not left unhandled.
  const cause = (err as { commitError?: unknown }).commitError;
  if (cause instanceof Promise) cause.catch(() => undefined);
  return true;
}

/**
 * Whether an unhandled rejection is one of lmdb-js's own after a failed commit (its batch promise,
 * or the cause it rejects apart): those the process outlives (src/server.ts).
 */
export function isUnawaitedCommitFailure(reason: unknown): boolean {
  return isCommitFailure(reason) || (reason instanceof Error && /[\\/]node_modules[\\/]lmdb[\\/]write\.js/.test(reason.stack ?? ''));
}

/** A directory's commit failures, as the collections and the store see them. */
export interface CommitFailures {
  /** Since when commits fail (ms since the epoch), or null while they succeed. */
  readonly since: number | null;
  /** A commit failed (told by a write that heard it); true when this starts a failure (to be reported once). */
  failed(): boolean;
  /** Refuses a transaction while commits fail. */
  assertCommitting(): void;
  /** A document whose acknowledged lazy writes are not committed: `requeue` queues its write again. */
  keep(pending: PendingDoc, requeue: () => void): void;
  /** Its writes committed (or can never be: reported by the caller). */
  forget(pending: PendingDoc): void;
  /** How many documents hold acknowledged writes that are not committed. */
  readonly kept: number;
  /** Retries at once, and every RETRY_FIRST_MS for up to `ms`; resolves to whether everything committed. */
  drain(ms: number): Promise<boolean>;
  stop(): void;
}

export class Failures implements CommitFailures {
  since: number | null = null;
  /** Bumped by every failed commit: a retry clears the failure only if none failed while it ran. */
  private epoch = 0;
  private reported = false;
  private readonly waiting = new Map<PendingDoc, () => void>();
  private delay = RETRY_FIRST_MS;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    env: RootDatabase,
    /** Queues every deferred lazy write now (directory.ts). */
    private readonly flushDeferred: () => void,
    /** A small write of its own: whether writes commit again when no document waits. */
    private readonly probe: () => Promise<unknown>,
    /** Writes again the shared structures a failed commit lost (structures.ts), if any. */
    private readonly resaveStructures: () => Promise<unknown> | undefined = () => undefined,
  ) {
    // lmdb-js calls this synchronously as it learns a commit's outcome, before running the next
    // batch's callbacks; a failed commit has no transaction id.
    (env as unknown as { on(event: 'aftercommit', cb: (info?: { txnId?: number }) => void): void }).on('aftercommit', (info) => {
      if (info?.txnId === undefined) this.start();
    });
  }

  get kept(): number {
    return this.waiting.size;
  }

  failed(): boolean {
    this.start();
    if (this.reported) return false;
    this.reported = true;
    return true;
  }

  assertCommitting(): void {
    if (this.since !== null) throw new StoreUnavailableError(this.since);
  }

  keep(pending: PendingDoc, requeue: () => void): void {
    pending.failed = true;
    this.waiting.set(pending, requeue);
    this.start();
  }

  forget(pending: PendingDoc): void {
    pending.failed = false;
    this.waiting.delete(pending);
  }

  async drain(ms: number): Promise<boolean> {
    const until = Date.now() + ms;
    while (this.since !== null) {
      if (await this.retry()) return true;
      if (Date.now() >= until) return false;
      await new Promise((r) => setTimeout(r, RETRY_FIRST_MS));
    }
    return true;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private start(): void {
    this.epoch++;
    if (this.since === null) {
      this.since = Date.now();
      this.delay = RETRY_FIRST_MS;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.stopped || this.since === null) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.retry().then((ok) => {
        if (ok) return;
        this.delay = Math.min(this.delay * 2, RETRY_MAX_MS);
        this.schedule();
      });
    }, this.delay);
    this.timer.unref();
  }

  /**
   * Writes the lost shared structures again first, then every kept document (those whose write is
   * not queued already) and the probe after them (commits are ordered); clears the failure when all
   * of them committed and none failed meanwhile.
   */
  private async retry(): Promise<boolean> {
    const epoch = this.epoch;
    const structures = this.resaveStructures();
    for (const [pending, requeue] of this.waiting) if (!pending.queued) requeue();
    this.flushDeferred();
    try {
      await structures;
      await this.probe();
    } catch (err) {
      isCommitFailure(err); // its cause heard
      return false;
    }
    // The kept documents' commits settled before the probe's (their handlers ran first).
    if (epoch !== this.epoch || this.waiting.size > 0) return false;
    this.since = null;
    this.reported = false;
    return true;
  }
}
