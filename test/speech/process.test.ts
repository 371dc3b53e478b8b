// spawnTool's children die with the process that spawned them, however it dies: a parent killed
// with SIGKILL (no exit handler runs) takes its tools with it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { spawnTool, ToolMissingError } from '../../src/speech/process.ts';
import { evalModule } from '../build.ts';
import { procStat } from '../proc.ts';

const PROCESS_TS = evalModule(fileURLToPath(new URL('../../src/speech/process.ts', import.meta.url)));

describe('spawnTool', { skip: process.platform !== 'linux' ? 'the parent-death signal is Linux only' : false }, () => {
  it('a tool dies with its parent when the parent is killed -9', async (t) => {
    // A parent that starts `sleep 600` through spawnTool and says its pid.
    const parent = spawn(
      process.execPath,
      [
        ...PROCESS_TS.loader,
        '--input-type=module',
        '-e',
        `
      const { spawnTool } = await import(${JSON.stringify(PROCESS_TS.url)});
      const run = spawnTool('sleep', ['600'], { stdin: 'ignore' });
      run.child.once('spawn', () => console.log(run.child.pid));
      setInterval(() => {}, 1000);
    `,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [line] = await Promise.race([
      createInterface({ input: parent.stdout! })
        [Symbol.asyncIterator]()
        .next()
        .then((r) => [r.value as string]),
      sleep(15_000, undefined, { ref: false }).then(() => assert.fail('the parent did not start its tool')),
    ]);
    const tool = Number(line);
    try {
      // The tool itself is the child: setpriv exec'd it, nothing stands in between.
      for (let i = 0; i < 100 && !readFileSync(`/proc/${tool}/cmdline`, 'utf8').startsWith('sleep\0'); i++) await sleep(10);
      assert.equal(readFileSync(`/proc/${tool}/cmdline`, 'utf8'), 'sleep\x00600\x00');
      assert.equal(procStat(tool)?.ppid, parent.pid);

      const killedAt = Date.now();
      parent.kill('SIGKILL');
      await new Promise((r) => parent.once('exit', r));
      while (Date.now() - killedAt < 2_000) {
        const st = procStat(tool);
        if (st === null || st.state === 'Z') break; // a zombie holds nothing; its new parent reaps it
        await sleep(5);
      }
      const st = procStat(tool);
      assert.ok(st === null || st.state === 'Z', `sleep (pid ${tool}) still running ${Date.now() - killedAt} ms after its parent was killed`);
      t.diagnostic(`the tool was gone ${Date.now() - killedAt} ms after the kill`);
    } finally {
      parent.kill('SIGKILL');
      try {
        process.kill(tool, 'SIGKILL');
      } catch {
        // gone, as it should be
      }
    }
  });

  it('a missing tool is a spawn error naming it, not an exit code', async () => {
    const run = spawnTool('no-such-tool-here', ['x'], { stdin: 'ignore' });
    const exit = await run.exited;
    assert.ok(exit.spawnError instanceof ToolMissingError);
    assert.match(exit.spawnError.message, /^no-such-tool-here is not installed/);
    assert.equal(exit.code, null);
  });

  it('a tool that fails keeps its own exit code', async () => {
    const exit = await spawnTool('sh', ['-c', 'echo nope >&2; exit 127'], { stdin: 'ignore' }).exited;
    assert.deepEqual(exit, { code: 127, signal: null });
  });
});
