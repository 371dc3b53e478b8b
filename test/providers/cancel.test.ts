// Cancel, the light signal of the chat and embeddings path: AbortSignal's semantics for what we use,
// and undici really aborts a request with it.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Agent } from 'undici';
import { Cancel } from '../../src/providers/cancel.ts';
import { evalModule } from '../build.ts';

describe('Cancel', () => {
  it('calls each listener once, in order, with the reason set; removed and late listeners are not called', () => {
    const cancel = new Cancel();
    const calls: string[] = [];
    const removed = () => calls.push('removed');
    cancel.addEventListener('abort', () => calls.push(`a:${String(cancel.reason)}`));
    cancel.addEventListener('abort', removed);
    cancel.addEventListener('abort', () => calls.push(`b:${cancel.aborted}`));
    cancel.removeEventListener('abort', removed);
    assert.equal(cancel.aborted, false);
    cancel.abort('gone');
    cancel.abort('again');
    cancel.addEventListener('abort', () => calls.push('late'));
    assert.deepEqual(calls, ['a:gone', 'b:true']);
    assert.equal(cancel.reason, 'gone');
  });

  it('runs every listener even when one throws, and reports that error as an uncaught exception, as EventTarget does', () => {
    // In a child process: node:test claims uncaught exceptions of its own process as test failures.
    const cancelTs = evalModule(fileURLToPath(new URL('../../src/providers/cancel.ts', import.meta.url)));
    const script = `
      import { Cancel } from ${JSON.stringify(cancelTs.url)};
      const calls = [];
      process.on('uncaughtException', (err) => { calls.push('reported:' + err.message); console.log(JSON.stringify(calls)); });
      const cancel = new Cancel();
      cancel.addEventListener('abort', () => { throw new Error('listener failed'); });
      cancel.addEventListener('abort', () => calls.push('second'));
      cancel.abort();
      calls.push('after abort');
    `;
    const run = spawnSync(process.execPath, [...cancelTs.loader, '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout.trim()), ['second', 'after abort', 'reported:listener failed']);
  });

  it('defaults the reason to an AbortError, as AbortController does', () => {
    const cancel = new Cancel();
    cancel.abort();
    assert.ok(cancel.reason instanceof DOMException);
    assert.equal((cancel.reason as DOMException).name, 'AbortError');
  });

  it('aborts an undici request in flight', async () => {
    const server = createServer(() => undefined); // never answers
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const agent = new Agent();
    try {
      const cancel = new Cancel();
      const { port } = server.address() as AddressInfo;
      const pending = agent.request({ origin: `http://127.0.0.1:${port}`, path: '/', method: 'GET', signal: cancel });
      setTimeout(() => cancel.abort(new Error('caller left')), 50);
      await assert.rejects(pending, /caller left/);
    } finally {
      await agent.destroy();
      server.closeAllConnections();
      server.close();
    }
  });
});
