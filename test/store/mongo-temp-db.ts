// A database per test run on the MongoDB server at MONGODB_URL, dropped afterwards, so runs never see
// each other's data. Used by the store's and the blob port's contract suites.

import { randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';

export async function withTempDb<T extends { close(): Promise<void> }>(
  url: string,
  prefix: string,
  open: (dbName: string) => Promise<T>,
): Promise<{ opened: T; cleanup: () => Promise<void> }> {
  const dbName = `${prefix}_${randomUUID().replaceAll('-', '')}`;
  const opened = await open(dbName);
  return {
    opened,
    cleanup: async () => {
      await opened.close();
      const client = await MongoClient.connect(url);
      try {
        await client.db(dbName).dropDatabase();
      } finally {
        await client.close();
      }
    },
  };
}
