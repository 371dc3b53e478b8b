// The dashboard's files as the gateway serves them: gzip only to a client that accepts it, and
// never to one that refuses it with q=0 (RFC 9110 §12.5.3).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestGateway, type TestGateway } from '../helper.ts';

/** GET `path` with exactly the given Accept-Encoding (fetch would add its own). */
function get(base: string, path: string, acceptEncoding: string | undefined): Promise<{ status: number; encoding: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { headers: acceptEncoding === undefined ? {} : { 'accept-encoding': acceptEncoding } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, encoding: res.headers['content-encoding'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('dashboard assets', () => {
  let gw: TestGateway;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gw-dash-'));
    await mkdir(join(dir, 'assets'));
    // Large enough to be kept gzipped (over 512 bytes, and smaller zipped).
    await writeFile(join(dir, 'index.html'), `<!doctype html><title>x</title>${'<p>dashboard</p>'.repeat(100)}`);
    await writeFile(join(dir, 'assets', 'app-abc.js'), `console.log(1);\n`.repeat(100));
    gw = await startTestGateway({ dashboardDir: dir });
  });
  after(async () => {
    await gw.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  for (const path of ['/dashboard', '/dashboard/assets/app-abc.js']) {
    it(`${path}: gzip when accepted, identity when not or refused with q=0`, async () => {
      assert.deepEqual(await get(gw.url, path, 'gzip, deflate, br'), { status: 200, encoding: 'gzip' });
      assert.deepEqual(await get(gw.url, path, 'br;q=1.0, gzip;q=0.5'), { status: 200, encoding: 'gzip' });
      assert.deepEqual(await get(gw.url, path, undefined), { status: 200, encoding: undefined });
      assert.deepEqual(await get(gw.url, path, 'identity'), { status: 200, encoding: undefined });
      assert.deepEqual(await get(gw.url, path, 'gzip;q=0'), { status: 200, encoding: undefined });
      assert.deepEqual(await get(gw.url, path, 'br, gzip; q=0.0'), { status: 200, encoding: undefined });
      assert.deepEqual(await get(gw.url, path, 'x-gzip-like'), { status: 200, encoding: undefined });
    });
  }
});
