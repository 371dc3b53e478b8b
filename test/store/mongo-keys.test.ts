// The MongoDB adapter checks the `_id`s a call names before any I/O (the contract's "key strings"
// case runs against a real server only when MONGODB_URL is set): here the client points at a port
// nobody listens on, so a refusal that arrives at once and is an InvalidKeyError came from the check.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { mongoStoreOn } from '../../src/store/mongo.ts';
import { InvalidKeyError } from '../../src/store/port.ts';

describe('MongoDB adapter: key strings', () => {
  const client = new MongoClient('mongodb://127.0.0.1:9/?serverSelectionTimeoutMS=200&connectTimeoutMS=200');
  const store = mongoStoreOn(client, 'gateway_keys_test');
  after(() => store.close());
  const c = store.collection('c');
  const invalid = (err: unknown) => err instanceof InvalidKeyError && err.field === '_id';

  it('refuses a NUL or an unpaired surrogate in an _id without reaching the server', async () => {
    for (const id of ['a\u0000b', 'a\ud800', '\udc00']) {
      const started = Date.now();
      await assert.rejects(c.insertOne({ _id: id }), invalid);
      await assert.rejects(c.insertMany([{ _id: 'fine' }, { _id: id }]), invalid);
      await assert.rejects(c.findOne({ _id: id }), invalid);
      await assert.rejects(c.find({ _id: { $in: ['ok', id] } }), invalid);
      await assert.rejects(c.updateOne({ k: 1 }, { $setOnInsert: { _id: id } }, { upsert: true }), invalid);
      await assert.rejects(c.findOneAndUpdate({ _id: id }, { $set: { v: 1 } }), invalid);
      await assert.rejects(c.replaceOne({ _id: 'ok' }, { _id: id }), invalid);
      await assert.rejects(c.deleteMany({ _id: id }), invalid);
      assert.ok(Date.now() - started < 150, 'refused before server selection');
    }
  });

  it('passes a well-formed _id on to the driver', async () => {
    await assert.rejects(c.findOne({ _id: '😀' }), (err: unknown) => !(err instanceof InvalidKeyError) && (err as Error).name === 'MongoServerSelectionError');
  });
});
