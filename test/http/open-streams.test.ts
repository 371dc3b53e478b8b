// OpenStreams.write, the writes of every streamed response (speech, chat and responses SSE), on a
// real loopback connection: a client that reads nothing is cut once the socket stayed full for
// the stall timeout; a client that reads slowly is not, however long the stream.
import assert from 'node:assert/strict';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { OpenStreams } from '../../src/http/open-streams.ts';
import { openSocket } from './raw-socket.ts';

const STALL_MS = 300;
const CHUNK = Buffer.alloc(16 * 1024, 1);

interface Ended {
  /** How the response ended: cut (destroyed) or finished. */
  how: 'cut' | 'finished';
  written: number;
  /** The longest a write waited, and all the writes' waits together (ms). */
  longestWaitMs: number;
  waitedMs: number;
}

/** A server whose one response writes `total` bytes through `streams.write`, then ends. */
async function streamingServer(streams: OpenStreams, total: number): Promise<{ server: Server; url: string; ended: Promise<Ended>; warnings: object[] }> {
  let report!: (e: Ended) => void;
  const ended = new Promise<Ended>((resolve) => (report = resolve));
  const warnings: object[] = [];
  const server = createServer((_req, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    void streams.track(res, { warn: (obj) => void warnings.push(obj) }, async () => {
      let written = 0;
      let longestWaitMs = 0;
      let waitedMs = 0;
      while (written < total && !res.destroyed) {
        const started = performance.now();
        await streams.write(res, CHUNK);
        const wait = performance.now() - started;
        longestWaitMs = Math.max(longestWaitMs, wait);
        waitedMs += wait;
        written += CHUNK.length;
      }
      if (!res.destroyed) res.end();
      report({ how: res.destroyed ? 'cut' : 'finished', written, longestWaitMs, waitedMs });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ended, warnings };
}

describe('OpenStreams.write: the stall timeout of streamed responses', { timeout: 10_000 }, () => {
  const servers: Server[] = [];
  after(() => {
    for (const s of servers) {
      s.closeAllConnections();
      s.close();
    }
  });

  it('cuts a client that stops reading once its socket stayed full for the stall timeout', async () => {
    const streams = new OpenStreams(STALL_MS);
    const { server, url, ended, warnings } = await streamingServer(streams, 1 << 30);
    servers.push(server);
    const socket = await openSocket(url);
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    await new Promise((resolve) => socket.once('data', resolve));
    socket.pause();
    const end = await ended;
    assert.equal(end.how, 'cut');
    assert.ok(end.written < 64 << 20, `${end.written} bytes written before the cut`);
    assert.ok(end.longestWaitMs >= STALL_MS && end.longestWaitMs < STALL_MS + 500, `the last write waited ${Math.round(end.longestWaitMs)} ms`);
    assert.equal(warnings.length, 1);
    await sleep(10);
    assert.equal(streams.size, 0, 'its route is done');
    socket.destroy();
  });

  it('does not cut a client that reads in bursts, each pause shorter than the stall timeout', async () => {
    // Its own stall timeout, far above the pauses: the test process's event loop (client and server
    // both) can be late by a few hundred ms on a loaded machine, and 300 ms against pauses of 100 ms
    // once cut this client.
    const stallMs = 900;
    const streams = new OpenStreams(stallMs);
    const total = 16 << 20;
    const { server, url, ended, warnings } = await streamingServer(streams, total);
    servers.push(server);
    const socket = await openSocket(url);
    socket.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    // Every 150 ms the client takes 1 MB, then reads nothing until the next turn: far slower than the
    // server writes, so its writes wait most of the time, each wait far less than a stall.
    let read = 0;
    let turn = 0;
    let perTurn = 1 << 20;
    socket.on('data', (b: Buffer) => {
      read += b.length;
      turn += b.length;
      if (turn >= perTurn) socket.pause();
    });
    const turns = setInterval(() => {
      turn = 0;
      socket.resume();
    }, 150).unref();
    const end = await ended;
    clearInterval(turns);
    assert.equal(end.how, 'finished');
    assert.equal(end.written, total);
    assert.ok(end.waitedMs > stallMs, `the writes waited ${Math.round(end.waitedMs)} ms in all, the longest ${Math.round(end.longestWaitMs)} ms`);
    assert.ok(end.longestWaitMs < stallMs);
    assert.deepEqual(warnings, []);
    perTurn = Infinity;
    socket.resume();
    while (read < total) await sleep(20);
    socket.destroy();
  });
});
