// DATA_DIR/tmp: private, one folder per gateway process, and at start whatever a dead gateway left
// there (its folder, an engine still working in it) is gone before anything is served; a live
// gateway's folder is left alone.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { openTmpArea } from '../../src/shared/tmp-area.ts';
import { procStat } from '../proc.ts';

const linux = process.platform === 'linux';

describe('the tmp area (DATA_DIR/tmp)', () => {
  it('is private, and each gateway works in a folder of its own that close removes', async () => {
    const data = join(await mkdtemp(join(tmpdir(), 'gw-tmparea-')), 'data');
    try {
      const a = await openTmpArea(data);
      const b = await openTmpArea(data); // a second gateway in this process: the first's folder is live
      assert.notEqual(a.dir, b.dir);
      assert.ok(existsSync(a.dir) && existsSync(b.dir));
      for (const d of [join(data, 'tmp'), a.dir, b.dir]) assert.equal(statSync(d).mode & 0o777, 0o700, d);
      assert.deepEqual(b.swept, { folders: 0, processes: 0 });
      await a.close();
      assert.equal(existsSync(a.dir), false);
      assert.deepEqual(readdirSync(join(data, 'tmp')), [b.dir.split('/').at(-1)]);
      await b.close();
    } finally {
      await rm(join(data, '..'), { recursive: true, force: true });
    }
  });

  it('sweeps what dead gateways left, kills an engine still working there, and narrows a wide folder', { skip: !linux && 'reads /proc' }, async () => {
    const data = join(await mkdtemp(join(tmpdir(), 'gw-tmparea-')), 'data');
    const area = join(data, 'tmp');
    // A dead gateway's folder (this pid with another start time: the pid was reused), with audio and
    // an "engine" that names a path inside it; a file nobody owns; a live gateway's folder.
    const dead = join(area, `${process.pid}-1-0badc0de`);
    const audio = join(dead, 'pocketsphinx-x1', 'audio.raw');
    mkdirSync(join(dead, 'pocketsphinx-x1'), { recursive: true });
    writeFileSync(audio, 'customer audio');
    writeFileSync(join(area, 'stray'), '');
    const live = join(area, `${process.pid}-${procStat('self')!.start}-cafe`);
    mkdirSync(live);
    await chmod(area, 0o755);
    const engine = spawn('tail', ['-f', audio], { stdio: 'ignore' });
    const engineExit = new Promise<NodeJS.Signals | null>((r) => engine.once('exit', (_code, signal) => r(signal)));
    await new Promise((r) => engine.once('spawn', r));
    try {
      const opened = await openTmpArea(data);
      assert.deepEqual(opened.swept, { folders: 2, processes: 1 });
      assert.equal(await engineExit, 'SIGKILL');
      assert.equal(existsSync(dead), false);
      assert.deepEqual(readdirSync(area).sort(), [live.split('/').at(-1), opened.dir.split('/').at(-1)].sort());
      assert.equal(statSync(area).mode & 0o777, 0o700);
      await opened.close();
    } finally {
      engine.kill('SIGKILL');
      await rm(join(data, '..'), { recursive: true, force: true });
    }
  });
});
