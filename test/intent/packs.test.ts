// The pack registry: packs in the store, compiled once per stored body in a process.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PackRegistry } from '../../src/intent/packs.ts';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import { toyShopPack } from './toy-shop.ts';

describe('intent pack registry', () => {
  it("two registries of one process (two gateways) share a body's compiled pack; a new body compiles anew and is used at once", async () => {
    const dirs = [await mkdtemp(join(tmpdir(), 'packs-a-')), await mkdtemp(join(tmpdir(), 'packs-b-'))];
    const stores = await Promise.all(dirs.map((dir) => openEmbeddedStore({ dir })));
    try {
      const [a, b] = stores.map((s) => new PackRegistry(s, Date.now));
      const pack = { ...toyShopPack(), id: 'toy-cache' };
      await a!.seed([pack as never]);
      await b!.seed([pack as never]);
      const first = await a!.compiledPack('toy-cache');
      assert.ok(first);
      assert.equal(await b!.compiledPack('toy-cache'), first, 'the other registry compiled the same body again');
      assert.equal(await a!.compiledPack('toy-cache'), first);
      // An administrator's upload: a different body, its own compile, and served from the next request.
      await b!.put({ ...pack, version: 2, thresholds: { accept: 0.5 } });
      const second = await b!.compiledPack('toy-cache');
      assert.notEqual(second, first);
      assert.equal(second!.thresholds.accept, 0.5);
      assert.equal((await a!.compiledPack('toy-cache'))!.thresholds.accept, first!.thresholds.accept, 'the first store still holds its own body');
      // A config file of a higher version replaces a pack that came from config (a data directory
      // seeded by an older release), never one an administrator uploaded.
      await a!.seed([{ ...pack, version: 3, thresholds: { accept: 0.6 } } as never]);
      assert.deepEqual([(await a!.list())[0]!.version, (await a!.compiledPack('toy-cache'))!.thresholds.accept], [3, 0.6]);
      await b!.seed([{ ...pack, version: 3, thresholds: { accept: 0.6 } } as never]);
      assert.deepEqual([(await b!.list())[0]!.version, (await b!.list())[0]!.source], [2, 'admin']);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    }
  });
});
