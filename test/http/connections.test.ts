// The HTTP edge below the routes, over raw sockets on loopback against a listening gateway: what
// Node's parser refuses (malformed request lines, NUL and obs-fold headers, TE with CL, bad chunks,
// oversized headers) and what times out (stalled headers, stalled bodies) is answered in the error
// envelope with a fresh x-request-id and `Connection: close`, then the socket is closed; the
// configured timeouts hold to about a second; connections are capped in total and per address.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { call, startTestGateway, type TestGateway } from '../helper.ts';
import { exchange, openSocket, type RawResponse } from './raw-socket.ts';

const REQUEST_ID = /^req_[0-9a-f]{32}$/;

/** The envelope, a fresh request id in the header and body, Connection: close, and the server hung up. */
function assertRefused(res: RawResponse, status: number, code: string, where: string): void {
  assert.equal(res.status, status, `${where}: ${res.raw.slice(0, 300)}`);
  assert.equal(res.headers.connection, 'close', where);
  assert.match(res.headers['x-request-id'] ?? '', REQUEST_ID, where);
  assert.match(res.headers['content-type'] ?? '', /^application\/json/, where);
  const body = JSON.parse(res.body);
  assert.equal(body.error.code, code, where);
  assert.equal(typeof body.error.message, 'string', where);
  assert.equal(typeof body.error.type, 'string', where);
  assert.equal(body.error.request_id, res.headers['x-request-id'], where);
  assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body), where);
  assert.ok(res.closed, `${where}: the server kept the connection open`);
}

describe('errors from the HTTP parser', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(async () => {
    await gw.destroy();
  });

  const cases: [string, string, number, string][] = [
    ['a malformed request line', 'GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
    ['a method that is not a token', 'G@T /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'invalid_request'],
    ['a NUL in a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n', 400, 'invalid_request'],
    ['an obs-fold header', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  folded\r\n\r\n', 400, 'invalid_request'],
    [
      'Transfer-Encoding with Content-Length',
      'POST /portal/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n',
      400,
      'invalid_request',
    ],
    [
      'a chunk size that is not hex',
      'POST /portal/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      400,
      'invalid_request',
    ],
    ['headers over the size limit', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
  ];
  for (const [name, request, status, code] of cases) {
    it(`answers ${name} with ${status} in the envelope and closes`, async () => {
      assertRefused(await exchange(gw.url, request), status, code, name);
    });
  }

  it('sends no body to a HEAD request', async () => {
    const res = await exchange(gw.url, 'HEAD /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n');
    assert.equal(res.status, 400, res.raw);
    assert.equal(res.headers.connection, 'close');
    assert.match(res.headers['x-request-id'] ?? '', REQUEST_ID);
    assert.equal(res.body, '');
    assert.ok(res.closed);
  });

  it('closes a keep-alive connection after a malformed request; a fresh connection works', async () => {
    const socket = await openSocket(gw.url);
    const first = await exchange(socket, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', { untilResponse: true });
    assert.equal(first.status, 200);
    assert.notEqual(first.headers.connection, 'close');
    const bad = await exchange(socket, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n');
    assertRefused(bad, 400, 'invalid_request', 'second request on the socket');
    const fresh = await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(fresh.status, 200);
    assert.deepEqual(JSON.parse(fresh.body), { status: 'ok' });
  });

  it('counts what it refused in /metrics', async () => {
    await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n');
    const m = await call(gw.metricsUrl, 'GET', '/metrics');
    assert.match(m.text, /gateway_http_client_errors_total\{status="400",reason="HPE_INVALID_HEADER_TOKEN"\} [1-9]/);
  });
});

describe('timeouts hold to about a second', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ http: { requestTimeoutMs: 1500, headersTimeoutMs: 1000 } });
  });
  after(async () => {
    await gw.destroy();
  });

  it('cuts stalled headers at headersTimeoutMs with a 408', async () => {
    const res = await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', { waitMs: 5000 });
    assertRefused(res, 408, 'request_timeout', 'stalled headers');
    assert.ok(res.ms >= 950 && res.ms < 1000 + 1500, `cut after ${Math.round(res.ms)} ms`);
  });

  it('cuts a stalled body at requestTimeoutMs with a 408', async () => {
    const head = 'POST /portal/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":';
    const res = await exchange(gw.url, head, { waitMs: 5000 });
    assertRefused(res, 408, 'request_timeout', 'stalled body');
    assert.ok(res.ms >= 1450 && res.ms < 1500 + 1500, `cut after ${Math.round(res.ms)} ms`);
    // The gateway still serves.
    assert.equal((await call(gw.url, 'GET', '/healthz')).status, 200);
  });
});

describe('connection caps', () => {
  const held: Socket[] = [];
  after(() => {
    for (const s of held) s.destroy();
  });

  it('refuses connections over the per-address cap with a 503, and admits again once one closes', async () => {
    const gw = await startTestGateway({ http: { maxConnectionsPerAddress: 3 } });
    try {
      const mine: Socket[] = [];
      for (let i = 0; i < 3; i++) mine.push(await openSocket(gw.url));
      held.push(...mine);
      const refused = await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assertRefused(refused, 503, 'too_many_connections', 'fourth connection');
      assert.equal(refused.headers['retry-after'], '1');
      // The admitted ones work.
      const ok = await exchange(mine[0]!, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', { untilResponse: true });
      assert.equal(ok.status, 200);
      mine[1]!.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const again = await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.equal(again.status, 200, again.raw);
      const m = await call(gw.metricsUrl, 'GET', '/metrics');
      assert.match(m.text, /gateway_http_connections_refused_total\{reason="per_address"\} 1/);
    } finally {
      for (const s of held) s.destroy();
      await gw.destroy();
    }
  });

  it('refuses connections over the total cap', async () => {
    const gw = await startTestGateway({ http: { maxConnections: 2 } });
    try {
      for (let i = 0; i < 2; i++) held.push(await openSocket(gw.url));
      const refused = await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      assertRefused(refused, 503, 'too_many_connections', 'third connection');
      for (const s of held.splice(0)) s.destroy();
      await new Promise((r) => setTimeout(r, 100));
      const m = await call(gw.metricsUrl, 'GET', '/metrics');
      assert.match(m.text, /gateway_http_connections_refused_total\{reason="total"\} 1/);
      assert.match(m.text, /gateway_http_connections 0/);
    } finally {
      await gw.destroy();
    }
  });

  it('does not cap a trusted proxy per address (every client arrives from it)', async () => {
    const gw = await startTestGateway({ http: { maxConnectionsPerAddress: 2, trustProxy: ['127.0.0.0/8'] } });
    try {
      for (let i = 0; i < 4; i++) held.push(await openSocket(gw.url));
      const res = await exchange(gw.url, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
      assert.equal(res.status, 200, res.raw);
    } finally {
      for (const s of held.splice(0)) s.destroy();
      await gw.destroy();
    }
  });
});
