// The shared upstream HTTP client: the SSE reader's parsing and bounds over plain Node streams, and
// UpstreamHttp's pooling, timeouts, size limits and error classification against loopback servers.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamHttp } from '../../src/providers/http.ts';
import { readSse, type SseMessage, type SseOptions } from '../../src/providers/sse.ts';
import { scrub, statusError } from '../../src/providers/upstream-errors.ts';
import { UpstreamError } from '../../src/providers/types.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { closedPort, collect, never, routeTo, until } from './helpers.ts';

const OPTS: SseOptions = { routeId: 'm#0', maxLineBytes: 1000, maxBytes: 100_000, idleTimeoutMs: 5000, maxDurationMs: 10_000 };

function sse(parts: (string | Buffer)[], opts: Partial<SseOptions> = {}): AsyncGenerator<SseMessage> {
  const body = new PassThrough();
  (async () => {
    for (const p of parts) {
      body.write(p);
      await sleep(0);
    }
    body.end();
  })();
  return readSse(body, { ...OPTS, ...opts });
}

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, `expected UpstreamError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a failure');
}

describe('readSse', () => {
  const WIRE = Buffer.from(
    '\uFEFF: a comment\r\nevent: message_start\r\ndata: {"a":\r\ndata: 1}\r\nid: 7\r\n\r\n' +
      'data: {"b":"é€"}\r\r' +
      'data:{"c":3}\n\n' +
      'event: lonely\n\n' +
      'data: [DONE]\n\ndata: {"after":"done"}\n\n',
  );
  const EXPECTED: SseMessage[] = [
    { type: 'event', event: 'message_start', data: { a: 1 } },
    { type: 'event', event: 'message', data: { b: 'é€' } },
    { type: 'event', event: 'message', data: { c: 3 } },
    { type: 'done' },
  ];

  it('parses events, multi-line data, comments, CRLF, lone CR, a BOM and [DONE] whatever the chunking', async () => {
    assert.deepEqual(await collect(sse([WIRE])), EXPECTED);
    // Split at every byte: across CR|LF, inside "data:", inside a UTF-8 sequence.
    for (let i = 1; i < WIRE.length; i++) {
      assert.deepEqual(await collect(sse([WIRE.subarray(0, i), WIRE.subarray(i)])), EXPECTED, `split at ${i}`);
    }
    const bytes = [...WIRE].map((b) => Buffer.from([b]));
    assert.deepEqual(await collect(sse(bytes)), EXPECTED);
  });

  it('drops an event cut off by the end of the stream', async () => {
    assert.deepEqual(await collect(sse(['data: {"x":1}\n\ndata: {"y":2}\n'])), [{ type: 'event', event: 'message', data: { x: 1 } }]);
  });

  it('refuses a line longer than the limit, even when it arrives in pieces', async () => {
    const err = await failure(collect(sse(['data: "', 'x'.repeat(600), 'x'.repeat(600), '"\n\n'])));
    assert.equal(err.kind, 'protocol');
    assert.match(err.message, /line exceeds 1000 bytes/);
  });

  it('refuses an event whose data lines add up past the limit', async () => {
    const line = `data: ${'1'.repeat(400)}\n`;
    const err = await failure(collect(sse([line, line, line, '\n'])));
    assert.match(err.message, /event exceeds 1000 bytes/);
  });

  it('refuses a stream longer than maxBytes', async () => {
    const frame = `data: {"x":"${'y'.repeat(100)}"}\n\n`;
    const err = await failure(
      collect(
        sse(
          Array.from({ length: 20 }, () => frame),
          { maxBytes: 1000 },
        ),
      ),
    );
    assert.match(err.message, /stream exceeds 1000 bytes/);
  });

  it('throws protocol on data that is not JSON, after the events before it', async () => {
    const seen: SseMessage[] = [];
    const err = await failure(
      (async () => {
        for await (const m of sse(['data: {"ok":1}\n\n', 'data: {"choices": [\n\n'])) seen.push(m);
      })(),
    );
    assert.equal(err.kind, 'protocol');
    assert.deepEqual(seen, [{ type: 'event', event: 'message', data: { ok: 1 } }]);
  });

  it('refuses an event nested deeper than 64 levels', async () => {
    const err = await failure(collect(sse([`data: ${'['.repeat(65)}${']'.repeat(65)}\n\n`])));
    assert.equal(err.kind, 'protocol');
    assert.deepEqual(await collect(sse([`data: ${'['.repeat(64)}${']'.repeat(64)}\n\n`])), [
      { type: 'event', event: 'message', data: JSON.parse('['.repeat(64) + ']'.repeat(64)) },
    ]);
  });

  it('times out an upstream silent for idleTimeoutMs, but not a slow consumer', async () => {
    const body = new PassThrough();
    body.write('data: {"n":1}\n\n');
    const seen: SseMessage[] = [];
    const started = Date.now();
    const err = await failure(
      (async () => {
        for await (const m of readSse(body, { ...OPTS, idleTimeoutMs: 80 })) seen.push(m);
      })(),
    );
    assert.equal(err.kind, 'timeout');
    assert.equal(seen.length, 1);
    assert.ok(Date.now() - started < 1000);

    // The consumer dawdles 120 ms over the first event; the upstream sends the next one soon after.
    const slow = new PassThrough();
    slow.write('data: {"n":1}\n\n');
    setTimeout(() => slow.end('data: {"n":2}\n\n'), 150);
    const got: SseMessage[] = [];
    for await (const m of readSse(slow, { ...OPTS, idleTimeoutMs: 50 })) {
      got.push(m);
      if (got.length === 1) await sleep(120);
    }
    assert.equal(got.length, 2);
  });

  it('ends a stream that outlives maxDurationMs however busy it is', async () => {
    const body = new PassThrough();
    const timer = setInterval(() => body.write(': keep-alive\n'), 10);
    try {
      const err = await failure(collect(readSse(body, { ...OPTS, maxDurationMs: 100 })));
      assert.equal(err.kind, 'timeout');
    } finally {
      clearInterval(timer);
    }
  });
});

describe('scrub and statusError', () => {
  it('removes URLs, addresses, keys and control characters from an upstream explanation', () => {
    const said = 'bad request for http://10.0.0.5:8000/v1/chat at 10.0.0.5:8000 with key sk-secret-abcdef0123 and MYKEY12345\u0007';
    const out = scrub(said, ['MYKEY12345']);
    for (const leak of ['http://', '10.0.0.5', '8000', 'sk-secret', 'MYKEY12345', '\u0007']) assert.ok(!out.includes(leak), `${leak} in ${out}`);
    assert.ok(scrub('x'.repeat(1000), []).length <= 301);
  });

  it('classifies statuses: request errors, retryable ones, and configuration ones', () => {
    const body = JSON.stringify({ error: { message: 'This model maximum context length is 8 tokens' } });
    const cases: [number, UpstreamError['kind'], boolean][] = [
      [400, 'client', false],
      [413, 'client', false],
      [422, 'client', false],
      [401, 'config', false],
      [403, 'config', false],
      [404, 'config', false],
      [402, 'config', false],
      [302, 'config', false],
      [429, 'http', true],
      [408, 'http', true],
      [500, 'http', true],
      [502, 'http', true],
      [503, 'http', true],
      [529, 'http', true],
    ];
    for (const [status, kind, retryable] of cases) {
      const e = statusError('m#0', status, body, []);
      assert.equal(e.kind, kind, `status ${status}`);
      assert.equal(e.retryable, retryable, `status ${status}`);
      assert.equal(e.status, status);
    }
    assert.equal(statusError('m#0', 400, body, []).upstreamMessage, 'This model maximum context length is 8 tokens');
    assert.equal(statusError('m#0', 400, '<html>oops</html>', []).upstreamMessage, undefined);
    assert.equal(statusError('m#0', 400, '{"detail":"bad"}', []).upstreamMessage, 'bad');
  });
});

describe('UpstreamHttp', () => {
  let up: FakeServer;
  let http: UpstreamHttp;
  before(async () => {
    up = await startOpenAIUpstream();
    http = new UpstreamHttp({ maxResponseBytes: 50_000, maxSseLineBytes: 2000, streamIdleTimeoutMs: 300 });
  });
  after(async () => {
    await http.close();
    await up.close();
  });

  const call = (path: string, body: unknown, over: Partial<Parameters<UpstreamHttp['postJson']>[0]> = {}) => ({
    routeId: 'm#0',
    url: new URL(`${up.url}${path}`),
    headers: {},
    body,
    timeoutMs: 2000,
    signal: never,
    ...over,
  });
  const CHAT = { model: 'x', messages: [{ role: 'user', content: 'hi' }] };

  it('reuses keep-alive connections for sequential requests', async () => {
    const before = up.requests.length;
    for (let i = 0; i < 6; i++) await http.postJson(call('/v1/chat/completions', CHAT));
    // undici may open a second socket while the first is being released; never one per request.
    const ports = new Set(up.requests.slice(before).map((r) => r.remotePort));
    assert.ok(ports.size <= 2, `${ports.size} connections for 6 sequential requests`);
  });

  it('classifies a refused connection without naming the address', async () => {
    const port = await closedPort();
    const err = await failure(http.postJson({ ...call('/x', {}), url: new URL(`http://127.0.0.1:${port}/x`) }));
    assert.equal(err.kind, 'connect');
    assert.equal(err.retryable, true);
    assert.ok(!err.message.includes('127.0.0.1') && !err.message.includes(String(port)), err.message);
    assert.match(err.message, /m#0/);
  });

  it('times out after timeoutMs and closes the connection', async () => {
    up.next({ hang: true });
    const started = Date.now();
    const err = await failure(http.postJson(call('/v1/chat/completions', CHAT, { timeoutMs: 150 })));
    assert.equal(err.kind, 'timeout');
    assert.ok(Date.now() - started < 1000);
    const rec = up.requests.at(-1)!;
    await rec.ended;
    assert.equal(rec.closedEarly, true);
  });

  it('refuses an answer larger than maxResponseBytes', async () => {
    up.next({ padBytes: 80_000 });
    const err = await failure(http.postJson(call('/v1/chat/completions', CHAT)));
    assert.equal(err.kind, 'protocol');
    assert.match(err.message, /exceeds 50000 bytes/);
  });

  /** A loopback server answering with `handle`, for bodies the fake upstream does not send. */
  async function withRawServer(handle: (req: IncomingMessage, res: ServerResponse) => void, run: (base: string) => Promise<void>): Promise<void> {
    const server = createServer(handle);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  }

  it('refuses an answer without a declared length once it grows past maxResponseBytes', async () => {
    await withRawServer(
      (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' }); // chunked: no content-length
        res.write('{"pad":"');
        res.write('x'.repeat(req.url === '/big' ? 60_000 : 1000));
        res.end('"}');
      },
      async (base) => {
        const err = await failure(http.postJson({ ...call('/x', {}), url: new URL(`${base}/big`) }));
        assert.equal(err.kind, 'protocol');
        assert.match(err.message, /exceeds 50000 bytes/);
        const small = (await http.postJson({ ...call('/x', {}), url: new URL(`${base}/small`) })) as { pad: string };
        assert.equal(small.pad.length, 1000);
      },
    );
  });

  it('reports an answer cut mid-body as a retryable failure, and one stalled mid-body as a timeout', async () => {
    await withRawServer(
      (req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"choices":[');
        if (req.url === '/cut') setTimeout(() => res.socket?.destroy(), 20);
      },
      async (base) => {
        const cut = await failure(http.postJson({ ...call('/x', {}), url: new URL(`${base}/cut`) }));
        assert.equal(cut.kind, 'connect');
        assert.equal(cut.retryable, true);
        const started = Date.now();
        const stalled = await failure(http.postJson({ ...call('/x', {}), url: new URL(`${base}/stall`), timeoutMs: 150 }));
        assert.equal(stalled.kind, 'timeout');
        assert.ok(Date.now() - started < 1000, `${Date.now() - started} ms`);
      },
    );
  });

  it('refuses JSON nested absurdly deep without spending seconds parsing it', async () => {
    const started = Date.now();
    // Unguarded, V8 takes about 2.5 s over these 8 MB; the depth scan refuses them in milliseconds.
    up.next({ rawBody: '['.repeat(4_000_000) + ']'.repeat(4_000_000) });
    const big = new UpstreamHttp({ maxResponseBytes: 16 << 20 });
    try {
      assert.equal((await failure(big.postJson(call('/v1/chat/completions', CHAT)))).kind, 'protocol');
    } finally {
      await big.close();
    }
    assert.ok(Date.now() - started < 1500, `${Date.now() - started} ms`);
    // Brackets inside strings are text, not nesting.
    up.next({ rawBody: JSON.stringify({ choices: [], note: '['.repeat(500) }) });
    assert.equal(((await http.postJson(call('/v1/chat/completions', CHAT))) as { note: string }).note.length, 500);
  });

  it('refuses a 200 that is not JSON', async () => {
    up.next({ rawBody: '<html>proxy error</html>' });
    assert.equal((await failure(http.postJson(call('/v1/chat/completions', CHAT)))).kind, 'protocol');
  });

  it('explains a 400 with the scrubbed upstream message', async () => {
    up.next({ status: 400, message: `unsupported parameter at ${up.url}/v1 for key sk-up-0123456789` });
    const err = await failure(http.postJson(call('/v1/chat/completions', CHAT, { secrets: ['sk-up-0123456789'] })));
    assert.equal(err.kind, 'client');
    assert.ok(err.upstreamMessage?.startsWith('unsupported parameter'));
    assert.ok(!err.upstreamMessage?.includes('127.0.0.1') && !err.upstreamMessage?.includes('sk-up'), err.upstreamMessage);
  });

  it('aborts a pending request when the caller signal fires', async () => {
    up.next({ hang: true });
    const ac = new AbortController();
    const pending = http.postJson(call('/v1/chat/completions', CHAT, { signal: ac.signal }));
    await until(() => up.requests.at(-1)?.body?.model === 'x' && up.active > 0);
    ac.abort();
    assert.equal((await failure(pending)).kind, 'aborted');
    await up.requests.at(-1)!.ended;
    assert.equal(up.requests.at(-1)!.closedEarly, true);
  });

  it('opens an event stream, and refuses a 2xx that is not one', async () => {
    const events = await http.openSse(call('/v1/chat/completions', { ...CHAT, stream: true }));
    const all = await collect(events);
    assert.deepEqual(all.at(-1), { type: 'done' });
    const err = await failure(http.openSse(call('/v1/chat/completions', CHAT)));
    assert.equal(err.kind, 'protocol');
    assert.match(err.message, /event stream/);
  });

  it('returns the socket to the pool after [DONE], even when the response ends a little later', async () => {
    up.next({ lingerMs: 50 });
    const n = up.requests.length;
    await collect(await http.openSse(call('/v1/chat/completions', { ...CHAT, stream: true })));
    await sleep(100);
    for (let i = 0; i < 4; i++) await http.postJson(call('/v1/chat/completions', CHAT));
    const [stream, ...later] = up.requests.slice(n);
    assert.ok(
      later.some((r) => r.remotePort === stream!.remotePort),
      'the stream connection was not reused',
    );
  });

  it('closes the connection of a stream whose response does not end within a second of [DONE]', async () => {
    // A long idle timeout, so that undici's own body timeout (idle + 1 s) is not what closes it.
    const patient = new UpstreamHttp({ streamIdleTimeoutMs: 10_000 });
    try {
      up.next({ lingerMs: 5000 });
      const n = up.requests.length;
      const started = Date.now();
      await collect(await patient.openSse(call('/v1/chat/completions', { ...CHAT, stream: true })));
      const stream = up.requests[n]!;
      await stream.ended;
      const took = Date.now() - started;
      assert.equal(stream.closedEarly, true);
      assert.ok(took >= 900 && took < 3000, `closed after ${took} ms`);
    } finally {
      await patient.close();
    }
  });

  it('times out a stream that goes silent after its headers', async () => {
    up.next({ hangAfterChunks: 2 });
    const events = await http.openSse(call('/v1/chat/completions', { ...CHAT, stream: true }));
    const seen: SseMessage[] = [];
    const err = await failure(
      (async () => {
        for await (const m of events) seen.push(m);
      })(),
    );
    assert.equal(err.kind, 'timeout');
    assert.equal(seen.length, 2);
  });

  it('refuses an SSE line over maxSseLineBytes', async () => {
    up.next({ longLineBytes: 5000 });
    const events = await http.openSse(call('/v1/chat/completions', { ...CHAT, stream: true }));
    const err = await failure(collect(events));
    assert.equal(err.kind, 'protocol');
  });

  it('reports a connection cut mid-stream as a retryable failure', async () => {
    up.next({ closeAfterChunks: 2 });
    const events = await http.openSse(call('/v1/chat/completions', { ...CHAT, stream: true }));
    const err = await failure(collect(events));
    assert.equal(err.kind, 'connect');
    assert.equal(err.retryable, true);
  });

  it('treats a route whose base_url is unusable as misconfigured', async () => {
    const { routeUrl } = await import('../../src/providers/http.ts');
    assert.equal(routeUrl(routeTo('http://h:1', { baseUrl: 'http://h:1/v1/' }), '/chat/completions').href, 'http://h:1/v1/chat/completions');
    for (const baseUrl of ['not a url', 'ftp://h/v1', 'http://user:pw@h/v1']) {
      assert.throws(
        () => routeUrl(routeTo('x', { baseUrl }), '/x'),
        (e: unknown) => e instanceof UpstreamError && e.kind === 'config',
      );
    }
  });
});
