// The transfers' hand-offs (src/voice/handoffs.ts) in the store, on a clock the test moves: what one
// instance recorded, another instance on the same store answers; an unknown carrier call and one
// handed off over 10 minutes ago are not answered (the read compares times: the TTL index only
// cleans up). On the embedded store, and on MongoDB when MONGODB_URL names a server.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Store } from '../../src/store/port.ts';
import { Handoffs, TRANSFER_TTL_MS } from '../../src/voice/handoffs.ts';
import { withTempDb } from '../store/mongo-temp-db.ts';

const adapters: { name: string; open: () => Promise<{ store: Store; cleanup: () => Promise<void> }> }[] = [
  {
    name: 'embedded',
    open: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'handoffs-'));
      const store = await openEmbeddedStore({ dir });
      return { store, cleanup: async () => (await store.close(), await rm(dir, { recursive: true, force: true })) };
    },
  },
];
const mongoUrl = process.env.MONGODB_URL;
if (mongoUrl)
  adapters.push({
    name: 'mongodb',
    open: async () => {
      const { openMongoStore } = await import('../../src/store/mongo.ts');
      const { opened: store, cleanup } = await withTempDb(mongoUrl, 'gateway_test', (dbName) => openMongoStore({ url: mongoUrl, dbName }));
      return { store, cleanup };
    },
  });

for (const adapter of adapters) {
  describe(`transfers' hand-offs in the store (${adapter.name})`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;
    let now = Date.UTC(2026, 0, 5, 10, 0, 0);
    const clock = () => now;
    before(async () => {
      ({ store, cleanup } = await adapter.open());
    });
    after(async () => cleanup?.());

    it('one instance records, another answers by the carrier call; unknown and expired ones are not answered', async () => {
      const here = new Handoffs(store, clock);
      const there = new Handoffs(store, clock); // another instance on the same data
      await here.init();
      await there.init();
      await here.record('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6', { to: '+919800000041', from: '08047491899' });
      await here.record('ffffffffffffffffffffffffffffffff', { to: '+919800000042', from: null });
      assert.deepEqual(await there.of('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6'), { to: '+919800000041', from: '08047491899' });
      assert.deepEqual(await there.of('ffffffffffffffffffffffffffffffff'), { to: '+919800000042', from: null });
      assert.equal(await there.of('00000000000000000000000000000000'), undefined, 'an unknown sid');
      now += TRANSFER_TTL_MS - 1000;
      assert.equal((await there.of('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6'))?.to, '+919800000041', 'still kept just before 10 minutes');
      now += 2000;
      assert.equal(await there.of('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6'), undefined, 'expired after 10 minutes, whether or not the sweep ran');
      // The same carrier call handed off again (a later hand-off of it) is answered with the latest number.
      await here.record('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6', { to: '+919800000043', from: null });
      assert.deepEqual(await there.of('a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6'), { to: '+919800000043', from: null });
    });
  });
}
