import { describe } from 'node:test';
import { openGridFsBlobs } from '../../src/blobs/gridfs.ts';
import { withTempDb } from '../store/mongo-temp-db.ts';
import { runBlobContract } from './contract.ts';

const url = process.env.MONGODB_URL;

if (url) {
  runBlobContract('gridfs', async () => {
    const { opened: blobs, cleanup } = await withTempDb(url, 'gateway_blobs', (dbName) => openGridFsBlobs({ url, dbName }));
    return { blobs, cleanup };
  });
} else {
  describe('blob contract: gridfs', { skip: 'MONGODB_URL not set: the GridFS adapter contract runs only against a real server' }, () => {});
}
