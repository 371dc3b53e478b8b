// One LMDB environment per data directory and process, shared by every store instance opened on
// it (LMDB forbids opening one environment twice in a process: closing either copy releases the
// other's locks, and a copy's reads would not see the other's commits), with the collections'
// lazy-write overlays (overlay.ts) and the flushes they defer, which must be shared for the same
// reason (a write through one instance must be queued behind another's deferred flush), and its
// commit failures (commit-failures.ts: the lazy writes a failed commit left, written again until
// they commit). The environment is closed when the last instance closes; the first opening's
// options apply.

import { realpathSync } from 'node:fs';
import type { RootDatabase } from 'lmdb';
import { Failures, type CommitFailures } from './commit-failures.ts';
import type { Overlay } from './overlay.ts';
import { KeptStructures } from './structures.ts';

/**
 * How long a lazy point write's flush waits before it is queued, so that the next writes of the
 * same document join it (a call's settle after its hold: at one call in flight 1.3 flushes per
 * call without the wait). Any other write, a read of the collection and close queue it at once,
 * so writes still reach LMDB in the order issued and no read waits for the delay. The crash
 * window of a lazy write grows by at most this much. Measured in docs/performance.md.
 */
const FLUSH_DELAY_MS = 2;

interface Shared {
  env: RootDatabase;
  refs: number;
  overlays: Map<string, Overlay>;
  /** Flushes of lazy point writes waiting for FLUSH_DELAY_MS. */
  deferred: (() => void)[];
  timer: NodeJS.Timeout | undefined;
  failures: Failures;
  structures: KeptStructures;
}

const open = new Map<string, Shared>();

export interface Directory {
  readonly env: RootDatabase;
  overlay(collection: string): Overlay;
  /** Runs `queue` (which queues a lazy point write's flush) after FLUSH_DELAY_MS, or sooner (flushDeferred). */
  deferFlush(queue: () => void): void;
  /** Queues every deferred flush now: before any other write is queued, so writes reach LMDB in the order issued. */
  flushDeferred(): void;
  /** Whether its commits fail, and the lazy writes a failed commit left (commit-failures.ts). */
  readonly failures: CommitFailures;
  /** The collections' shared msgpack structures, kept across a failed commit (structures.ts). */
  readonly structures: KeptStructures;
  /** Gives the environment up: closed once no instance holds it (after its queued writes commit). */
  release(): Promise<void>;
}

/** The directory's environment (opened by `openEnv` if no instance holds it yet) and its overlays. */
export function acquireDirectory(dir: string, openEnv: () => RootDatabase): Directory {
  const key = realpathSync(dir);
  let shared = open.get(key);
  if (!shared) {
    const env = openEnv();
    // The probe writes a key of its own in `meta` (store.ts), which nothing else reads.
    const meta = env.openDB<number[], string[]>('meta', {});
    const structures = new KeptStructures(env);
    const created: Shared = {
      env,
      refs: 0,
      overlays: new Map(),
      deferred: [],
      timer: undefined,
      failures: new Failures(
        env,
        () => flushDeferredOf(created),
        // Through a transaction, like every write of the store (a fault injected there reaches it too).
        () => env.childTransaction(() => meta.putSync(['probe', 'commit'], [])),
        () => structures.resaveLost(),
      ),
      structures,
    };
    shared = created;
    open.set(key, shared);
  }
  shared.refs++;
  const held = shared;
  let released = false;
  const flushDeferred = (): void => flushDeferredOf(held);
  return {
    env: held.env,
    failures: held.failures,
    structures: held.structures,
    overlay(collection) {
      let o = held.overlays.get(collection);
      if (!o) held.overlays.set(collection, (o = { pending: new Map(), txnWrites: 0, lazyCommit: undefined, indexGeneration: 0 }));
      return o;
    },
    deferFlush(queue) {
      held.deferred.push(queue);
      held.timer ??= setTimeout(flushDeferred, FLUSH_DELAY_MS);
    },
    flushDeferred,
    async release() {
      if (released) return;
      released = true;
      flushDeferred();
      if (--held.refs > 0) {
        // Another instance keeps it open: wait for what is queued (commits are ordered).
        await held.env.transaction(() => undefined);
        return;
      }
      if (open.get(key) === held) open.delete(key);
      held.failures.stop();
      // lmdb-js waits for the queued transactions (lazy writes' flushes too) to commit before closing.
      await held.env.close();
    },
  };
}

function flushDeferredOf(held: Shared): void {
  if (held.timer) clearTimeout(held.timer);
  held.timer = undefined;
  if (held.deferred.length === 0) return;
  const queue = held.deferred;
  held.deferred = [];
  for (const q of queue) q();
}
