// Overhead you can see (issue 42 §3): every /v1 answer says the gateway's own time in
// x-gateway-overhead-ms (its time less the wait on the upstream), and /metrics has it per route.
// Fake OpenAI upstreams (chat, embeddings, transcription, speech) on loopback, as a client meets them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../helper.ts';
import { startConformanceGateway, type ConformanceGateway } from '../conformance/gateway.ts';
import { wavBytes } from '../fakes/audio.ts';
import { multipartForm } from '../transcription/form.ts';
import type { FakeServer } from '../fakes/openai-upstream.ts';

const HEADER = 'x-gateway-overhead-ms';
/** What the fake upstream sleeps before each answer. */
const SLEEP_MS = 200;

let g: ConformanceGateway;

interface Timed {
  status: number;
  overhead: number;
  /** The client's time from sending the request to the end of the answer's body. */
  totalMs: number;
  text: string;
}

/** POSTs to /v1`path`, timing the whole exchange as the client sees it. */
async function timed(path: string, init: { body?: unknown; form?: { raw: Buffer; headers: Record<string, string> }; key?: string | null }): Promise<Timed> {
  const headers: Record<string, string> = init.form?.headers ?? { 'content-type': 'application/json' };
  if (init.key !== null) headers.authorization = `Bearer ${init.key ?? g.key}`;
  const start = performance.now();
  const res = await fetch(`${g.gw.url}/v1${path}`, { method: 'POST', headers, body: init.form?.raw ?? JSON.stringify(init.body) });
  const text = await res.text();
  const totalMs = performance.now() - start;
  const value = res.headers.get(HEADER);
  assert.ok(value !== null, `${path} ${res.status}: no ${HEADER}`);
  assert.match(value, /^\d+\.\d\d$/, `${HEADER}: ${value}`);
  return { status: res.status, overhead: Number(value), totalMs, text };
}

function within(t: Timed, what: string): void {
  assert.ok(t.overhead >= 0 && t.overhead <= t.totalMs, `${what}: overhead ${t.overhead} ms, the client's total ${t.totalMs.toFixed(2)} ms`);
}

/**
 * Calls `path` once to warm it (a route's first call compiles its schemas: tens of ms of the
 * gateway's own, rightly counted), then again with `upstream` sleeping SLEEP_MS: the client waits
 * that long, and the header leaves it out.
 */
async function upstreamLeftOut(
  upstream: FakeServer,
  path: string,
  init: Parameters<typeof timed>[1],
  what: string,
  opts: { decodes?: boolean } = {},
): Promise<Timed> {
  const warm = await timed(path, init);
  assert.equal(warm.status, 200, warm.text);
  within(warm, `${what} (warm-up)`);
  upstream.next({ delayMs: SLEEP_MS });
  const t = await timed(path, init);
  assert.equal(t.status, 200, t.text);
  within(t, what);
  assert.ok(t.totalMs >= SLEEP_MS, `${what}: the client waited ${t.totalMs} ms`);
  // The gateway's time is at most the client's, and the upstream's wait is at least its sleep.
  assert.ok(t.overhead <= t.totalMs - SLEEP_MS + 1, `${what}: overhead ${t.overhead} ms of ${t.totalMs} ms, the upstream slept ${SLEEP_MS} ms`);
  // An upload's probe and decode (the exact duration billed: src/transcription/sync.ts) is the gateway's own work, and ffmpeg's.
  if (!opts.decodes) assert.ok(t.overhead < SLEEP_MS / 2, `${what}: overhead ${t.overhead} ms with an upstream that slept ${SLEEP_MS} ms`);
  return t;
}

const CHAT = { model: 'chat', messages: [{ role: 'user', content: 'Say hello to the overhead header.' }] };

/** The overhead histogram's sum and count for a route, from /metrics. */
async function histogram(route: string): Promise<{ sum: number; count: number }> {
  const m = await call(g.gw.metricsUrl, 'GET', '/metrics');
  const read = (name: string) => {
    const line = m.text.split('\n').find((l) => l.startsWith(`gateway_http_overhead_seconds_${name}{route="${route}"}`));
    return line === undefined ? Number.NaN : Number(line.split(' ').pop());
  };
  return { sum: read('sum'), count: read('count') };
}

describe('x-gateway-overhead-ms', () => {
  before(async () => {
    g = await startConformanceGateway();
  });
  after(() => g.close());

  it('is on chat completions, JSON and streamed, and leaves out an upstream that sleeps 200 ms', async () => {
    await upstreamLeftOut(g.up, '/chat/completions', { body: CHAT }, 'chat JSON');
    const sse = await upstreamLeftOut(g.up, '/chat/completions', { body: { ...CHAT, stream: true } }, 'chat SSE');
    assert.match(sse.text, /data: \[DONE\]/);
  });

  it('is on embeddings, transcriptions and speech (raw and events), each leaving the upstream out', async () => {
    await upstreamLeftOut(g.up, '/embeddings', { body: { model: 'emb', input: ['one', 'two'] } }, 'embeddings');
    await upstreamLeftOut(g.up, '/audio/transcriptions', { form: multipartForm({ model: 'whisper' }, wavBytes(1)) }, 'transcription', { decodes: true });
    for (const stream_format of ['audio', 'sse']) {
      const body = { model: 'tts', voice: 'nova', input: 'Hello there.', response_format: 'pcm', stream_format };
      await upstreamLeftOut(g.speechUp, '/audio/speech', { body }, `speech ${stream_format}`);
    }
  });

  it('is on the Responses API, JSON and streamed', async () => {
    for (const stream of [false, true]) {
      await upstreamLeftOut(g.up, '/responses', { body: { model: 'chat', input: 'Say hello.', stream } }, `responses stream=${stream}`);
    }
  });

  it('is on error answers: a refused key, an unknown model, an unknown /v1 path', async () => {
    const unauthenticated = await timed('/chat/completions', { body: CHAT, key: null });
    assert.equal(unauthenticated.status, 401);
    within(unauthenticated, '401');
    const unknown = await timed('/chat/completions', { body: { ...CHAT, model: 'no-such-model' } });
    assert.equal(unknown.status, 404, unknown.text);
    within(unknown, '404 model');
    const path = await timed('/no/such/path', { body: {} });
    assert.equal(path.status, 404);
    within(path, '404 path');
  });

  describe('gateway_http_overhead_seconds', () => {
    it("observes a stream's whole overhead per route, without the upstream's waits between chunks", async () => {
      const before = await histogram('/v1/chat/completions');
      const count0 = Number.isNaN(before.count) ? 0 : before.count;
      const sum0 = Number.isNaN(before.sum) ? 0 : before.sum;
      // Eight words, an event each, 60 ms apart: the stream lasts over half a second.
      g.up.next({ chunkDelayMs: 60, reply: 'one two three four five six seven eight' });
      const sse = await timed('/chat/completions', { body: { ...CHAT, stream: true } });
      assert.equal(sse.status, 200, sse.text);
      assert.ok(sse.totalMs >= 500, `the stream took ${sse.totalMs} ms`);
      // The access of the response ends after the client read it: wait for onResponse to observe it.
      let after = await histogram('/v1/chat/completions');
      for (let i = 0; i < 50 && !(after.count > count0); i++) {
        await new Promise((r) => setTimeout(r, 20));
        after = await histogram('/v1/chat/completions');
      }
      assert.equal(after.count, count0 + 1, 'one more observation on the route label');
      const seconds = after.sum - sum0;
      assert.ok(seconds >= 0 && seconds < 0.25, `the stream's overhead observed: ${seconds} s of a ${sse.totalMs} ms stream`);
      assert.match((await call(g.gw.metricsUrl, 'GET', '/metrics')).text, /gateway_http_overhead_seconds_bucket\{le="0\.001",route="\/v1\/embeddings"\} \d+/);
    });
  });
});
