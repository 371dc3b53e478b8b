// One gateway process per embedded DATA_DIR: a second one started on it stops with a clear message
// (exit 2) naming the holder; a holder killed with -9 leaves a stale socket the next start takes
// over; gateways in one process share the lock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirLockError, lockDataDir } from '../../src/store/data-dir-lock.ts';
import { exited, gatewayArgs, launch, ROOT } from '../gateway-process.ts';

/** A gateway process that is expected not to start: its exit code and what it wrote to stderr. */
async function refusedStart(dataDir: string): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, gatewayArgs(), {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', METRICS_LISTEN: '127.0.0.1:0', DATA_DIR: dataDir, LOG_LEVEL: 'info', ADMIN_TOKEN: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const { code } = await exited(child);
  clearTimeout(timer);
  return { code, stderr };
}

describe('the DATA_DIR lock', () => {
  it('gateways in one process share it; the last release removes the socket', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dirlock-'));
    try {
      const a = await lockDataDir(dir);
      const b = await lockDataDir(dir);
      assert.ok(existsSync(join(dir, 'gateway.sock')));
      await a.release();
      await a.release(); // once only
      assert.ok(existsSync(join(dir, 'gateway.sock')), 'still held by b');
      await b.release();
      assert.ok(!existsSync(join(dir, 'gateway.sock')));
      await (await lockDataDir(dir)).release(); // and it can be taken again
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a second gateway process on the same DATA_DIR exits 2 naming the first; after the first is killed -9 the next start takes it over', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dirlock-'));
    try {
      const first = await launch(dir, { runCode: true });
      const second = await refusedStart(dir);
      assert.equal(second.code, 2, second.stderr);
      assert.match(second.stderr, new RegExp(`another gateway process \\(pid ${first.child.pid}\\) is using this DATA_DIR`));
      await assert.rejects(lockDataDir(dir), (err: unknown) => err instanceof DataDirLockError && err.message.includes(`pid ${first.child.pid}`));

      first.child.kill('SIGKILL');
      await exited(first.child);
      assert.ok(existsSync(join(dir, 'gateway.sock')), 'kill -9 left the socket file behind');
      const third = await launch(dir, { runCode: true });
      third.child.kill('SIGTERM');
      assert.equal((await exited(third.child)).code, 0);
      assert.ok(!existsSync(join(dir, 'gateway.sock')), 'a clean stop gives the lock up');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
