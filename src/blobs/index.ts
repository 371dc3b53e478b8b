// Chooses the blob store beside the document store: GridFS on MongoDB, files in `dataDir` otherwise.

import { openFsBlobs } from './fs.ts';
import { openGridFsBlobs } from './gridfs.ts';
import type { BlobStore } from './port.ts';

export * from './port.ts';

/** `tmpDir`: where GridFS copies a blob for `withFile` (the gateway's tmp area, src/tmp-area.ts). */
export async function openBlobs(cfg: { mongodbUrl?: string | undefined; dataDir: string; tmpDir: string }): Promise<BlobStore> {
  return cfg.mongodbUrl ? openGridFsBlobs({ url: cfg.mongodbUrl, tmpDir: cfg.tmpDir }) : openFsBlobs(cfg.dataDir);
}
