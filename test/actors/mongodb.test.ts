// The runtime's MongoDB paths: inbox wake-ups through a change stream (replica set), and the poll
// when change streams are unavailable. Runs only when MONGODB_URL is set, like the store contract.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import { StoreWakeups } from '../../src/actors/wakeups-store.ts';
import { openMongoStore } from '../../src/store/mongo.ts';
import { silent } from './helpers.ts';
import { streamKind } from './stream-helpers.ts';
import type { StreamReply } from './stream.machine.ts';

const url = process.env.MONGODB_URL;

if (url) {
  describe('actor runtime on mongodb', () => {
    for (const watch of [true, false]) {
      it(`an ask from a second instance reaches the owner ${watch ? 'through the change stream' : 'by polling'}`, async () => {
        const dbName = `gateway_test_${randomUUID().replaceAll('-', '')}`;
        const store = await openMongoStore({ url, dbName });
        const plain = watch
          ? store
          : {
              ...store,
              kind: store.kind,
              collection: store.collection.bind(store),
              ping: store.ping.bind(store),
              close: store.close.bind(store),
              watch: undefined,
            };
        const make = async (instanceId: string) => {
          const rt = new ActorRuntime({ store: plain, logger: silent, instanceId, inboxPollMs: watch ? 60_000 : 50, wakeups: new StoreWakeups(plain, silent) });
          rt.register(streamKind());
          await rt.start();
          return rt;
        };
        const a = await make('A');
        const b = await make('B');
        try {
          await a.spawn('stream', 'x', { id: 'x', account: 1, open: true });
          for (let seq = 0; seq < 10; seq++) await b.send('stream', 'x', { type: 'mark', seq });
          const { reply } = await b.ask<StreamReply>('stream', 'x', { type: 'whoami' }, { timeoutMs: 10_000 });
          assert.deepEqual(reply.seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
          assert.equal((await b.get('stream', 'x')).owner, 'A');
        } finally {
          await b.stop();
          await a.stop();
          await store.close();
          const client = await MongoClient.connect(url);
          await client
            .db(dbName)
            .dropDatabase()
            .finally(() => client.close());
        }
      });
    }
  });
} else {
  describe('actor runtime: mongodb', { skip: 'MONGODB_URL not set: the MongoDB paths run only against a real server' }, () => {});
}
