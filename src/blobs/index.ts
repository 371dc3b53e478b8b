// Chooses the blob store beside the document store: GridFS on MongoDB, files in `dataDir` otherwise.

import { openFsBlobs } from './fs.ts';
import { openGridFsBlobs } from './gridfs.ts';
import type { BlobStore } from './port.ts';

export * from './port.ts';

export async function openBlobs(cfg: { mongodbUrl?: string | undefined; dataDir: string }): Promise<BlobStore> {
  return cfg.mongodbUrl ? openGridFsBlobs({ url: cfg.mongodbUrl }) : openFsBlobs(cfg.dataDir);
}
