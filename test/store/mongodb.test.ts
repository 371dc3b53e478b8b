import { randomUUID } from 'node:crypto';
import { describe } from 'node:test';
import { MongoClient } from 'mongodb';
import { openMongoStore } from '../../src/store/mongo.ts';
import { runStoreContract } from './contract.ts';

const url = process.env.MONGODB_URL;

if (url) {
  runStoreContract('mongodb', async () => {
    // A database per run, dropped afterwards, so runs never see each other's data.
    const dbName = `gateway_test_${randomUUID().replaceAll('-', '')}`;
    const store = await openMongoStore({ url, dbName });
    return {
      store,
      cleanup: async () => {
        await store.close();
        const client = await MongoClient.connect(url);
        try {
          await client.db(dbName).dropDatabase();
        } finally {
          await client.close();
        }
      },
    };
  });
} else {
  describe('store contract: mongodb', { skip: 'MONGODB_URL not set: the MongoDB adapter contract runs only against a real server' }, () => {});
}
