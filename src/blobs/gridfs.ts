// Blobs in GridFS through the official driver (the MongoDB deployment).
//
// A key is a GridFS filename. A put uploads a new file (chunks first, then the files document that
// makes it visible, as GridFS does) and then deletes the older files of that name, so a reader sees
// the newest complete upload; an upload a crash cut short has no files document and is invisible
// (its orphan chunks are removed by `sweepOrphans`, run at open). Write concern: the deployment's
// (put `journal=true` in the URL for acknowledged-means-on-disk, as for the store).

import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Db, GridFSBucket, GridFSFile, MongoClient } from 'mongodb';
import { dbNameFromUrl } from '../store/mongo.ts';
import { escapeRegExp } from '../shared/strings.ts';
import { BlobTooLargeError, checkBlobKey, checkBlobPrefix, type BlobInfo, type BlobStore, type ByteRange, type PutOptions, type PutResult } from './port.ts';

// Loaded with this module, only when a MongoDB URL is configured (src/blobs/index.ts), as in src/store/mongo.ts.
const driver = await import('mongodb');

const BUCKET = 'blobs';

/** `tmpDir`: where `withFile` copies a blob (the gateway's tmp area); the OS temp dir when absent (tests). */
export async function openGridFsBlobs(opts: { url: string; dbName?: string; tmpDir?: string }): Promise<BlobStore> {
  const client = await new driver.MongoClient(opts.url).connect();
  const db = client.db(opts.dbName ?? dbNameFromUrl(opts.url));
  const blobs = new GridFsBlobs(client, db, opts.tmpDir ?? tmpdir());
  await blobs.init();
  return blobs;
}

class GridFsBlobs implements BlobStore {
  readonly kind = 'gridfs';
  private readonly bucket: GridFSBucket;
  constructor(
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly tmpDir: string,
  ) {
    this.bucket = new driver.GridFSBucket(db, { bucketName: BUCKET });
  }

  async init(): Promise<void> {
    await this.db.collection(`${BUCKET}.files`).createIndex({ filename: 1, uploadDate: -1 });
    await this.sweepOrphans();
  }

  /** Chunks whose files document never came (an upload cut short by a crash). */
  private async sweepOrphans(): Promise<void> {
    const chunks = this.db.collection(`${BUCKET}.chunks`);
    const ids = await chunks.distinct('files_id', { n: 0 });
    const files = new Set(
      (
        await this.db
          .collection(`${BUCKET}.files`)
          .find({ _id: { $in: ids } }, { projection: { _id: 1 } })
          .toArray()
      ).map((f) => String(f._id)),
    );
    const orphans = ids.filter((id) => !files.has(String(id)));
    // An upload in flight right now also has chunks without a files document: leave anything young.
    const cutoff = Date.now() - 10 * 60_000;
    const stale = orphans.filter((id) => typeof id?.getTimestamp !== 'function' || id.getTimestamp().getTime() < cutoff);
    if (stale.length) await chunks.deleteMany({ files_id: { $in: stale } });
  }

  private async newest(key: string): Promise<GridFSFile | null> {
    const [file] = await this.bucket
      .find({ filename: checkBlobKey(key) })
      .sort({ uploadDate: -1, _id: -1 })
      .limit(1)
      .toArray();
    return file ?? null;
  }

  async put(key: string, source: AsyncIterable<Uint8Array> | Uint8Array, options: PutOptions = {}): Promise<PutResult> {
    checkBlobKey(key);
    const hash = createHash('sha256');
    let size = 0;
    const upload = this.bucket.openUploadStream(key);
    const counted = async function* (): AsyncGenerator<Uint8Array> {
      for await (const chunk of source instanceof Uint8Array ? [source] : source) {
        options.signal?.throwIfAborted();
        size += chunk.byteLength;
        if (options.maxBytes !== undefined && size > options.maxBytes) throw new BlobTooLargeError(options.maxBytes);
        hash.update(chunk);
        yield chunk;
      }
      options.signal?.throwIfAborted();
    };
    try {
      await pipeline(Readable.from(counted()), upload);
    } catch (err) {
      await upload.abort().catch(() => {});
      throw err;
    }
    const sha256 = hash.digest('hex');
    await this.db.collection(`${BUCKET}.files`).updateOne({ _id: upload.id }, { $set: { metadata: { sha256 } } });
    const older = await this.bucket.find({ filename: key, _id: { $ne: upload.id } }, { projection: { _id: 1 } }).toArray();
    for (const f of older) await this.bucket.delete(f._id).catch(() => {});
    return { key, size, sha256, createdAt: upload.gridFSFile?.uploadDate ?? new Date() };
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const file = await this.newest(key);
    return file ? info(file) : null;
  }

  async get(key: string, range?: ByteRange): Promise<Readable | null> {
    const file = await this.newest(key);
    if (!file) return null;
    const start = Math.min(range?.start ?? 0, file.length);
    const end = Math.min(range?.end ?? file.length, file.length);
    if (end <= start) return Readable.from([]);
    return this.bucket.openDownloadStream(file._id, { start, end });
  }

  async withFile<T>(key: string, use: (path: string) => Promise<T>): Promise<T | null> {
    const stream = await this.get(key);
    if (!stream) return null;
    const dir = await mkdtemp(join(this.tmpDir, 'blob-'));
    try {
      const path = join(dir, 'blob');
      await pipeline(stream, createWriteStream(path, { mode: 0o600 }));
      return await use(path);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async delete(key: string): Promise<boolean> {
    const files = await this.bucket.find({ filename: checkBlobKey(key) }, { projection: { _id: 1 } }).toArray();
    for (const f of files) await this.bucket.delete(f._id).catch(() => {});
    return files.length > 0;
  }

  async list(prefix: string, options: { limit?: number } = {}): Promise<BlobInfo[]> {
    checkBlobPrefix(prefix);
    const limit = options.limit ?? 1000;
    const files = await this.db
      .collection<GridFSFile>(`${BUCKET}.files`)
      .aggregate<GridFSFile>([
        { $match: { filename: { $regex: `^${escapeRegExp(prefix)}` } } },
        { $sort: { filename: 1, uploadDate: -1, _id: -1 } },
        { $group: { _id: '$filename', doc: { $first: '$$ROOT' } } },
        { $replaceRoot: { newRoot: '$doc' } },
        { $sort: { filename: 1 } },
        { $limit: limit },
      ])
      .toArray();
    return files.map(info);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}

function info(file: GridFSFile): BlobInfo {
  return { key: file.filename, size: file.length, createdAt: file.uploadDate };
}
