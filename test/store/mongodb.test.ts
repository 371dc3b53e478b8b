import { describe } from 'node:test';
import { openMongoStore } from '../../src/store/mongo.ts';
import { runStoreContract } from './contract.ts';
import { withTempDb } from './mongo-temp-db.ts';

const url = process.env.MONGODB_URL;

if (url) {
  runStoreContract('mongodb', async () => {
    const { opened: store, cleanup } = await withTempDb(url, 'gateway_test', (dbName) => openMongoStore({ url, dbName }));
    return { store, cleanup };
  });
} else {
  describe('store contract: mongodb', { skip: 'MONGODB_URL not set: the MongoDB adapter contract runs only against a real server' }, () => {});
}
