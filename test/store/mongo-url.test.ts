import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dbNameFromUrl } from '../../src/store/mongo.ts';

describe('MongoDB adapter: database name', () => {
  it('takes the database from the connection string path, or none', () => {
    assert.equal(dbNameFromUrl('mongodb://localhost:27017/billing'), 'billing');
    assert.equal(dbNameFromUrl('mongodb://u:p%2Fw@a:1,b:2/billing?replicaSet=rs0'), 'billing');
    assert.equal(dbNameFromUrl('mongodb+srv://cluster.example.net/my%20db?retryWrites=true'), 'my db');
    assert.equal(dbNameFromUrl('mongodb://localhost:27017/?directConnection=true'), undefined);
    assert.equal(dbNameFromUrl('mongodb://localhost:27017'), undefined);
  });
});
