// The blob contract: what callers rely on, run against every adapter (fs.test.ts, mongodb.test.ts).
// Each test uses its own key prefix, so adapters can share one blob store per suite.

import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { BlobTooLargeError, InvalidBlobKeyError, type BlobStore } from '../../src/blobs/port.ts';

export type OpenBlobs = () => Promise<{ blobs: BlobStore; cleanup: () => Promise<void> }>;

async function bytesOf(stream: Readable | null): Promise<Buffer | null> {
  if (!stream) return null;
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

async function* chunked(data: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let off = 0; off < data.length; off += size) yield data.subarray(off, off + size);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export function runBlobContract(label: string, open: OpenBlobs): void {
  describe(`blob contract: ${label}`, () => {
    let blobs: BlobStore;
    let cleanup: () => Promise<void>;
    let seq = 0;
    const prefix = () => `t${Date.now().toString(36)}_${seq++}`;

    before(async () => {
      ({ blobs, cleanup } = await open());
    });
    after(async () => {
      await cleanup();
    });

    it('stores a streamed blob and reads it back whole, with its size, hash and time', async () => {
      const key = `${prefix()}/audio`;
      const data = randomBytes(3 * 1024 * 1024 + 17); // crosses GridFS's 255 KiB chunks many times
      const before = Date.now();
      const put = await blobs.put(key, chunked(data, 64 * 1024));
      assert.equal(put.key, key);
      assert.equal(put.size, data.length);
      assert.equal(put.sha256, sha(data));
      assert.ok(put.createdAt.getTime() >= before - 2000 && put.createdAt.getTime() <= Date.now() + 2000);
      const st = await blobs.stat(key);
      assert.equal(st?.size, data.length);
      assert.ok((await bytesOf(await blobs.get(key)))?.equals(data));
    });

    it('takes a Uint8Array source, and an empty blob', async () => {
      const p = prefix();
      await blobs.put(`${p}/a`, Buffer.from('hello'));
      assert.equal((await bytesOf(await blobs.get(`${p}/a`)))?.toString(), 'hello');
      const empty = await blobs.put(`${p}/empty`, new Uint8Array(0));
      assert.equal(empty.size, 0);
      assert.equal(empty.sha256, sha(Buffer.alloc(0)));
      assert.equal((await bytesOf(await blobs.get(`${p}/empty`)))?.length, 0);
    });

    it('answers null for a blob that does not exist', async () => {
      const key = `${prefix()}/missing`;
      assert.equal(await blobs.stat(key), null);
      assert.equal(await blobs.get(key), null);
      assert.equal(await blobs.withFile(key, async () => assert.fail('must not be called')), null);
      assert.equal(await blobs.delete(key), false);
    });

    it('replaces a blob with a second put; readers see the newest only', async () => {
      const key = `${prefix()}/x`;
      await blobs.put(key, Buffer.from('first version'));
      await blobs.put(key, Buffer.from('second'));
      assert.equal((await bytesOf(await blobs.get(key)))?.toString(), 'second');
      assert.equal((await blobs.stat(key))?.size, 6);
      assert.deepEqual(
        (await blobs.list(key)).map((b) => b.key),
        [key],
      );
    });

    it('refuses a blob past maxBytes as soon as it passes, storing nothing and keeping the old one', async () => {
      const p = prefix();
      let pulled = 0;
      async function* endless(): AsyncGenerator<Uint8Array> {
        for (;;) {
          pulled++;
          yield Buffer.alloc(64 * 1024, 1);
        }
      }
      await assert.rejects(blobs.put(`${p}/big`, endless(), { maxBytes: 1_000_000 }), BlobTooLargeError);
      assert.ok(pulled <= 17, `stopped reading at the limit (pulled ${pulled} chunks)`);
      assert.equal(await blobs.stat(`${p}/big`), null);
      await blobs.put(`${p}/kept`, Buffer.from('old'));
      await assert.rejects(blobs.put(`${p}/kept`, Buffer.alloc(11), { maxBytes: 10 }), BlobTooLargeError);
      assert.equal((await bytesOf(await blobs.get(`${p}/kept`)))?.toString(), 'old');
      // Exactly the limit is fine.
      assert.equal((await blobs.put(`${p}/exact`, Buffer.alloc(10), { maxBytes: 10 })).size, 10);
    });

    it('stores nothing when the source fails or the write is aborted', async () => {
      const p = prefix();
      async function* failing(): AsyncGenerator<Uint8Array> {
        yield Buffer.alloc(300 * 1024, 2);
        throw new Error('client went away');
      }
      await assert.rejects(blobs.put(`${p}/failed`, failing()), /client went away/);
      assert.equal(await blobs.stat(`${p}/failed`), null);
      const ac = new AbortController();
      async function* slow(): AsyncGenerator<Uint8Array> {
        yield Buffer.alloc(1024);
        ac.abort(new Error('cancelled'));
        yield Buffer.alloc(1024);
      }
      await assert.rejects(blobs.put(`${p}/aborted`, slow(), { signal: ac.signal }), /cancelled/);
      assert.equal(await blobs.stat(`${p}/aborted`), null);
      assert.deepEqual(await blobs.list(p), []);
    });

    it('reads byte ranges, end exclusive, clipped to the size', async () => {
      const key = `${prefix()}/r`;
      const data = randomBytes(600 * 1024);
      await blobs.put(key, data);
      const cases: Array<[number, number | undefined]> = [
        [0, 10],
        [100, 300 * 1024],
        [255 * 1024 - 3, 255 * 1024 + 3],
        [599 * 1024, undefined],
        [500, 10_000_000],
        [42, 42],
      ];
      for (const [start, end] of cases) {
        const got = await bytesOf(await blobs.get(key, { start, ...(end !== undefined ? { end } : {}) }));
        assert.ok(got?.equals(data.subarray(start, end)), `range ${start}-${end}`);
      }
    });

    it('hands tools a local file with the bytes', async () => {
      const key = `${prefix()}/file`;
      const data = randomBytes(4096);
      await blobs.put(key, data);
      const read = await blobs.withFile(key, async (path) => readFile(path));
      assert.ok(read?.equals(data));
    });

    it('deletes', async () => {
      const key = `${prefix()}/d`;
      await blobs.put(key, Buffer.from('x'));
      assert.equal(await blobs.delete(key), true);
      assert.equal(await blobs.get(key), null);
      assert.equal(await blobs.delete(key), false);
    });

    it('keeps a key and the keys below it apart, and lists by prefix in key order with a limit', async () => {
      const p = prefix();
      for (const k of ['b', 'a', 'a/2', 'a/1', 'ab', 'c/d/e']) await blobs.put(`${p}/${k}`, Buffer.from(k));
      assert.equal((await bytesOf(await blobs.get(`${p}/a`)))?.toString(), 'a');
      assert.equal((await bytesOf(await blobs.get(`${p}/a/1`)))?.toString(), 'a/1');
      const keys = async (pre: string, limit?: number) => (await blobs.list(pre, limit ? { limit } : {})).map((b) => b.key.slice(p.length + 1));
      assert.deepEqual(await keys(`${p}/`), ['a', 'a/1', 'a/2', 'ab', 'b', 'c/d/e']);
      assert.deepEqual(await keys(`${p}/a`), ['a', 'a/1', 'a/2', 'ab']);
      assert.deepEqual(await keys(`${p}/a/`), ['a/1', 'a/2']);
      assert.deepEqual(await keys(`${p}/`, 2), ['a', 'a/1']);
      const sizes = await blobs.list(`${p}/c/`);
      assert.equal(sizes[0]?.size, 5);
    });

    it('refuses keys that could leave the blob space or are not plain paths', async () => {
      const bad = [
        '',
        '/a',
        'a/',
        'a//b',
        '..',
        '../x',
        'a/../b',
        '.hidden',
        'a/.b',
        'a\0b',
        'a b',
        'a\\b',
        'é',
        'x'.repeat(129),
        Array(9).fill('s').join('/'),
      ];
      for (const key of bad) {
        await assert.rejects(blobs.put(key, Buffer.from('x')), InvalidBlobKeyError, JSON.stringify(key));
        await assert.rejects(blobs.get(key), InvalidBlobKeyError);
        await assert.rejects(blobs.stat(key), InvalidBlobKeyError);
        await assert.rejects(blobs.delete(key), InvalidBlobKeyError);
      }
      await assert.rejects(blobs.list('../'), InvalidBlobKeyError);
      // The longest plain key is fine.
      const longest = [prefix(), ...Array(7).fill('s'.repeat(128))].join('/');
      assert.equal((await blobs.put(longest, Buffer.from('y'))).size, 1);
    });
  });
}
