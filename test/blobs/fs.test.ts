import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openFsBlobs } from '../../src/blobs/fs.ts';
import { runBlobContract } from './contract.ts';

runBlobContract('fs', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gateway-blobs-'));
  const blobs = await openFsBlobs(dir);
  return {
    blobs,
    cleanup: async () => {
      await blobs.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
});

describe('fs blobs', () => {
  it('removes the temporary files a crash left behind when it opens, and keeps the blobs', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gateway-blobs-'));
    try {
      const first = await openFsBlobs(dir);
      await first.put('jobs/j1/audio', Buffer.from('kept'));
      // What a kill -9 mid-put leaves: a partial file in the temporary directory.
      await writeFile(join(dir, 'blobs', '.tmp', 'partial'), Buffer.alloc(1000));
      const reopened = await openFsBlobs(dir);
      assert.deepEqual(await readdir(join(dir, 'blobs', '.tmp')), []);
      assert.equal((await reopened.stat('jobs/j1/audio'))?.size, 4);
      assert.deepEqual(
        (await reopened.list('')).map((b) => b.key),
        ['jobs/j1/audio'],
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps files where the key says, under blobs/, with owner-only permissions', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gateway-blobs-'));
    try {
      const blobs = await openFsBlobs(dir);
      await blobs.put('a/b', Buffer.from('x'));
      const path = await blobs.withFile('a/b', async (p) => p);
      assert.equal(path, join(dir, 'blobs', 'a', 'b.blob'));
      const { statSync } = await import('node:fs');
      assert.equal(statSync(path!).mode & 0o777, 0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
