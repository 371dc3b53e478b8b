// One LMDB environment per data directory and process, shared by every store instance opened on
// it (LMDB forbids opening one environment twice in a process: closing either copy releases the
// other's locks, and a copy's reads would not see the other's commits), with the collections'
// lazy-write overlays (overlay.ts), which must be shared for the same reason. The environment is
// closed when the last instance closes; the first opening's options apply.

import { realpathSync } from 'node:fs';
import type { RootDatabase } from 'lmdb';
import type { Overlay } from './overlay.ts';

interface Shared {
  env: RootDatabase;
  refs: number;
  overlays: Map<string, Overlay>;
}

const open = new Map<string, Shared>();

export interface Directory {
  readonly env: RootDatabase;
  overlay(collection: string): Overlay;
  /** Gives the environment up: closed once no instance holds it (after its queued writes commit). */
  release(): Promise<void>;
}

/** The directory's environment (opened by `openEnv` if no instance holds it yet) and its overlays. */
export function acquireDirectory(dir: string, openEnv: () => RootDatabase): Directory {
  const key = realpathSync(dir);
  let shared = open.get(key);
  if (!shared) {
    shared = { env: openEnv(), refs: 0, overlays: new Map() };
    open.set(key, shared);
  }
  shared.refs++;
  const held = shared;
  let released = false;
  return {
    env: held.env,
    overlay(collection) {
      let o = held.overlays.get(collection);
      if (!o) held.overlays.set(collection, (o = { pending: new Map(), txnWrites: 0, lazyCommit: undefined }));
      return o;
    },
    async release() {
      if (released) return;
      released = true;
      if (--held.refs > 0) {
        // Another instance keeps it open: wait for what is queued (commits are ordered).
        await held.env.transaction(() => undefined);
        return;
      }
      if (open.get(key) === held) open.delete(key);
      // lmdb-js waits for the queued transactions (lazy writes' flushes too) to commit before closing.
      await held.env.close();
    },
  };
}
