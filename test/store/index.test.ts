import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openStore } from '../../src/store/index.ts';

describe('openStore', () => {
  it('opens the embedded store in a data directory it creates private to the user', async () => {
    const root = await mkdtemp(join(tmpdir(), 'gateway-open-'));
    try {
      const dataDir = join(root, 'nested', 'data');
      const store = await openStore({ dataDir, mongodbUrl: undefined });
      try {
        assert.equal(store.kind, 'embedded');
        await store.ping();
        await store.collection('c').insertOne({ _id: 1 });
      } finally {
        await store.close();
      }
      assert.equal((await stat(dataDir)).mode & 0o777, 0o700);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
