// Blobs as files under `<dataDir>/blobs` (the embedded default).
//
// A key's segments are directories and its last segment a file named `<segment>.blob`, so the keys
// `a` and `a/b` never collide (a file `a.blob` beside a directory `a`). A put streams into
// `.tmp/<random>`, hashing and counting as it goes, fsyncs the file, renames it into place and
// fsyncs the directories it changed: acknowledged means on disk, and a reader sees whole blobs only.
// Temporary files a crash left behind are removed when the store opens.

import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { BlobTooLargeError, checkBlobKey, checkBlobPrefix, type BlobInfo, type BlobStore, type ByteRange, type PutOptions, type PutResult } from './port.ts';

const SUFFIX = '.blob';
const TMP = '.tmp';
const WRITE_BYTES = 1 << 20;

export async function openFsBlobs(dataDir: string): Promise<BlobStore> {
  const root = join(dataDir, 'blobs');
  await mkdir(root, { recursive: true, mode: 0o700 });
  await rm(join(root, TMP), { recursive: true, force: true });
  await mkdir(join(root, TMP), { mode: 0o700 });
  return new FsBlobs(root);
}

class FsBlobs implements BlobStore {
  readonly kind = 'fs';
  constructor(private readonly root: string) {}

  private pathOf(key: string): string {
    return join(this.root, ...checkBlobKey(key).split('/')) + SUFFIX;
  }

  async put(key: string, source: AsyncIterable<Uint8Array> | Uint8Array, options: PutOptions = {}): Promise<PutResult> {
    const target = this.pathOf(key);
    const tmp = join(this.root, TMP, randomBytes(12).toString('hex'));
    const hash = createHash('sha256');
    let size = 0;
    const file = await open(tmp, 'wx', 0o600);
    let writing: Promise<void> = Promise.resolve();
    try {
      // Chunks are gathered into writes of about 1 MiB, and the next one fills while the last is written.
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      const flush = async () => {
        const batch = Buffer.concat(pending, pendingBytes);
        pending = [];
        pendingBytes = 0;
        await writing;
        writing = writeAll(file, batch);
        writing.catch(() => {}); // awaited at the next flush or below; never an unhandled rejection
      };
      for await (const chunk of source instanceof Uint8Array ? [source] : source) {
        options.signal?.throwIfAborted();
        size += chunk.byteLength;
        if (options.maxBytes !== undefined && size > options.maxBytes) throw new BlobTooLargeError(options.maxBytes);
        hash.update(chunk);
        pending.push(Buffer.from(chunk)); // a copy: a source may reuse its buffer once it yields the next
        pendingBytes += chunk.byteLength;
        if (pendingBytes >= WRITE_BYTES) await flush();
      }
      options.signal?.throwIfAborted();
      await flush();
      await writing;
      await file.sync();
    } catch (err) {
      await writing.catch(() => {});
      await file.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
    await file.close();
    const dir = dirname(target);
    const created = await mkdir(dir, { recursive: true, mode: 0o700 });
    await rename(tmp, target);
    await fsyncDir(dir);
    // Directories mkdir just made are entries in their parents: sync those too.
    if (created) {
      for (let d = dir; d.length >= created.length && d !== this.root; d = dirname(d)) await fsyncDir(dirname(d));
    }
    const st = await stat(target);
    return { key, size, sha256: hash.digest('hex'), createdAt: st.mtime };
  }

  async stat(key: string): Promise<BlobInfo | null> {
    const st = await stat(this.pathOf(key)).catch(notFound);
    return st ? { key, size: st.size, createdAt: st.mtime } : null;
  }

  async get(key: string, range?: ByteRange): Promise<Readable | null> {
    // Open first: a stream of a file that another put replaces or a delete removes keeps its bytes.
    const handle = await open(this.pathOf(key), 'r').catch(notFound);
    if (!handle) return null;
    const start = range?.start ?? 0;
    const end = range?.end;
    if (end !== undefined && end <= start) {
      await handle.close();
      return Readable.from([]);
    }
    return createReadStream('', { fd: handle, highWaterMark: WRITE_BYTES, start, ...(end !== undefined ? { end: end - 1 } : {}) });
  }

  async withFile<T>(key: string, use: (path: string) => Promise<T>): Promise<T | null> {
    const path = this.pathOf(key);
    if (!(await stat(path).catch(notFound))) return null;
    return use(path);
  }

  async delete(key: string): Promise<boolean> {
    const path = this.pathOf(key);
    const removed = await unlink(path).then(
      () => true,
      (err) => (notFound(err), false),
    );
    if (removed) await fsyncDir(dirname(path));
    return removed;
  }

  async list(prefix: string, options: { limit?: number } = {}): Promise<BlobInfo[]> {
    checkBlobPrefix(prefix);
    const limit = options.limit ?? 1000;
    const out: BlobInfo[] = [];
    // Walk only the directories the prefix can reach, in key order.
    const walk = async (dir: string, keyPrefix: string): Promise<void> => {
      const entries = await readdir(dir, { withFileTypes: true }).catch(notFound);
      if (!entries) return;
      const names = entries
        .filter((e) => !e.name.startsWith('.'))
        .map((e) => ({ e, key: keyPrefix + (e.isDirectory() ? `${e.name}/` : e.name.slice(0, -SUFFIX.length)) }))
        .filter(({ e }) => e.isDirectory() || e.name.endsWith(SUFFIX))
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      for (const { e, key } of names) {
        if (out.length >= limit) return;
        // Descend only where the prefix and this key agree on their common length.
        const n = Math.min(prefix.length, key.length);
        if (prefix.slice(0, n) !== key.slice(0, n)) continue;
        if (e.isDirectory()) await walk(join(dir, e.name), key);
        else if (key.startsWith(prefix)) {
          const st = await stat(join(dir, e.name)).catch(notFound);
          if (st) out.push({ key, size: st.size, createdAt: st.mtime });
        }
      }
    };
    await walk(this.root, '');
    return out;
  }

  async close(): Promise<void> {}
}

async function writeAll(file: FileHandle, chunk: Uint8Array): Promise<void> {
  for (let off = 0; off < chunk.byteLength; ) {
    const { bytesWritten } = await file.write(chunk, off, chunk.byteLength - off);
    off += bytesWritten;
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

function notFound(err: unknown): null {
  if ((err as NodeJS.ErrnoException)?.code === 'ENOENT' || (err as NodeJS.ErrnoException)?.code === 'ENOTDIR') return null;
  throw err;
}
