// Chooses the blob store beside the document store: GridFS on MongoDB, files in `dataDir` otherwise.
// The GridFS adapter (and with it the MongoDB driver) is imported only when a MongoDB URL is configured.

import { openFsBlobs } from './fs.ts';
import type { BlobStore } from './port.ts';

export * from './port.ts';

/** `tmpDir`: where GridFS copies a blob for `withFile` (the gateway's tmp area, src/shared/tmp-area.ts). */
export async function openBlobs(cfg: { mongodbUrl?: string | undefined; dataDir: string; tmpDir: string }): Promise<BlobStore> {
  if (cfg.mongodbUrl) return (await import('./gridfs.ts')).openGridFsBlobs({ url: cfg.mongodbUrl, tmpDir: cfg.tmpDir });
  return openFsBlobs(cfg.dataDir);
}
