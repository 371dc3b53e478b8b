// What a failed LMDB commit looks like (a full disk, an I/O error), and the store's answer to one.
// lmdb-js rejects every write of the failed batch with "Commit failed" (its `commitError` a promise
// of the cause), and also rejects promises of its own that nobody awaits: the batch's commit promise
// and that `commitError`. Left alone, those would end the process on Node's unhandled rejection, so a
// full disk would take the gateway down; src/server.ts lets them pass (isCommitFailure) and the store
// reports the failure itself: it says it is failing (Store.failing), billing refuses new holds with
// 503 `store_unavailable` (fail closed: no call is served that could not be recorded), and a probe
// write every PROBE_MS says when writes commit again.

/** How often a failing store tries a small write to learn whether writes commit again. */
export const PROBE_MS = 1000;

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
