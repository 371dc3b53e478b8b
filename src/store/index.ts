// Chooses the store: MongoDB when a URL is configured, otherwise the embedded store in `dataDir`.
// The MongoDB adapter (and with it the driver) is imported only then.

import { mkdir } from 'node:fs/promises';
import { openEmbeddedStore } from './embedded/store.ts';
import type { Store } from './port.ts';

export * from './port.ts';
export { isUnawaitedCommitFailure } from './embedded/commit-failures.ts';

export interface StoreConfig {
  mongodbUrl?: string | undefined;
  dataDir: string;
  ttlSweepMs?: number | undefined;
  /** Told about a failed TTL sweep and when the embedded store's commits start failing. */
  onError?: (err: unknown) => void;
}

export async function openStore(cfg: StoreConfig): Promise<Store> {
  if (cfg.mongodbUrl) return (await import('./mongo.ts')).openMongoStore({ url: cfg.mongodbUrl });
  // 0700: the data files hold account and billing records; no other local user should read them.
  await mkdir(cfg.dataDir, { recursive: true, mode: 0o700 });
  return openEmbeddedStore({
    dir: cfg.dataDir,
    ...(cfg.ttlSweepMs !== undefined ? { ttlSweepMs: cfg.ttlSweepMs } : {}),
    ...(cfg.onError ? { onError: cfg.onError } : {}),
  });
}
