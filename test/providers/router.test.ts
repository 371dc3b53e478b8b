// The upstream router over real sockets: failover and its error codes, committing to a stream only
// after its first chunk, mid-stream failures, aborts reaching the upstream, cool-downs, and the
// per-route limiters; plus resolveRoutes and the provider registry.
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { routeUrl, UpstreamHttp } from '../../src/providers/http.ts';
import { createProviders, PROVIDER_NAMES } from '../../src/providers/index.ts';
import { UpstreamRouter, type RouterOptions } from '../../src/providers/router.ts';
import { RouterError } from '../../src/providers/router-error.ts';
import { resolveRoutes, RouteResolver } from '../../src/providers/routes.ts';
import { UpstreamError, type ChatRequest, type ResolvedRoute } from '../../src/providers/types.ts';
import type { RouteConfig } from '../../src/models/types.ts';
import { startOpenAIUpstream, type FakeBehaviour, type FakeServer } from '../fakes/openai-upstream.ts';
import { startAnthropicUpstream } from '../fakes/anthropic-upstream.ts';
import { closedPort, drain, never, routeTo, text, until, USER } from './helpers.ts';

const KEY = 'sk-up-0123456789';
const HI: ChatRequest = { messages: [USER('hi')] };

function routerError(code: RouterError['code']) {
  return (e: unknown) => {
    assert.ok(e instanceof RouterError, `expected RouterError, got ${String(e)}`);
    assert.equal(e.code, code, e.message);
    return true;
  };
}

const isAborted = (e: unknown) => e instanceof UpstreamError && e.kind === 'aborted';

async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([p, sleep(ms).then(() => assert.fail(`${what} took over ${ms} ms`))]);
}

describe('UpstreamRouter', () => {
  let http: UpstreamHttp;
  let A: FakeServer;
  let B: FakeServer;
  const routers: UpstreamRouter[] = [];
  const router = (opts: RouterOptions = {}) => {
    const r = new UpstreamRouter(createProviders(http), opts);
    routers.push(r);
    return r;
  };
  const a = (over: Partial<ResolvedRoute> = {}) => routeTo(A, { id: 'm#0', apiKey: KEY, ...over });
  const b = (over: Partial<ResolvedRoute> = {}) => routeTo(B, { id: 'm#1', apiKey: KEY, ...over });

  before(() => {
    http = new UpstreamHttp({ streamIdleTimeoutMs: 300, maxSseLineBytes: 10_000 });
  });
  after(() => http.close());
  beforeEach(async () => {
    A = await startOpenAIUpstream({ apiKey: KEY });
    B = await startOpenAIUpstream({ apiKey: KEY });
  });
  afterEach(async () => {
    await Promise.all(routers.splice(0).map((r) => r.close()));
    await Promise.all([A.close(), B.close()]);
  });

  describe('complete', () => {
    it('serves from the first route when it works', async () => {
      const { result, route } = await router().complete([a(), b()], HI, never);
      assert.equal(route.id, 'm#0');
      assert.equal(result.choices[0]!.message.content, 'You said: hi');
      assert.equal(B.requests.length, 0);
    });

    it('fails over on a refused connection', async () => {
      const dead = routeTo(`http://127.0.0.1:${await closedPort()}`, { id: 'm#0' });
      const { route } = await router().complete([dead, b()], HI, never);
      assert.equal(route.id, 'm#1');
    });

    it('fails over on a timeout, promptly', async () => {
      A.next({ hang: true });
      const started = Date.now();
      const { route } = await router().complete([a({ timeoutMs: 150 }), b()], HI, never);
      assert.equal(route.id, 'm#1');
      assert.ok(Date.now() - started < 1500);
    });

    it('fails over on 500, 502, 503, 529 and 429, and on a reset connection', async () => {
      const r = router();
      for (const behaviour of [{ status: 500 }, { status: 502 }, { status: 503 }, { status: 529 }, { status: 429 }, { reset: true }] as FakeBehaviour[]) {
        A.next(behaviour);
        const { route } = await r.complete([a(), b()], HI, never);
        assert.equal(route.id, 'm#1', JSON.stringify(behaviour));
      }
    });

    it('answers model_misconfigured when every route is misconfigured (401, 404 model, no key variable)', async () => {
      const [missing] = resolveRoutes('m', [{ provider: 'openai', base_url: `${B.url}/v1`, api_key_env: 'NOPE', upstream_model: 'x' }], {});
      await assert.rejects(router().complete([a({ apiKey: 'sk-wrong' }), { ...missing!, id: 'm#1' }], HI, never), routerError('model_misconfigured'));
      assert.equal(B.requests.length, 0, 'a route without its key is not called');
      const strict = await startOpenAIUpstream({ models: ['other'] });
      try {
        await assert.rejects(router().complete([routeTo(strict)], HI, never), routerError('model_misconfigured'));
      } finally {
        await strict.close();
      }
    });

    it('answers model_unavailable when some route failed otherwise, and serves from a working one past a misconfigured one', async () => {
      B.next({ status: 503 });
      await assert.rejects(router().complete([a({ apiKey: 'sk-wrong' }), b()], HI, never), routerError('model_unavailable'));
      const { route } = await router().complete([a({ apiKey: 'sk-wrong' }), b()], HI, never);
      assert.equal(route.id, 'm#1');
    });

    it('answers model_unavailable naming route ids but never an upstream URL or key', async () => {
      A.next({ status: 503, message: `down at ${A.url}` });
      B.next({ status: 500 });
      try {
        await router().complete([a(), b()], HI, never);
        assert.fail('expected a failure');
      } catch (e) {
        routerError('model_unavailable')(e);
        const err = e as RouterError;
        assert.match(err.message, /m#0.*m#1/);
        for (const leak of ['127.0.0.1', String(new URL(A.url).port), KEY]) assert.ok(!err.message.includes(leak), err.message);
        assert.deepEqual(err.attempts, [
          { route: 'm#0', outcome: 'http', status: 503 },
          { route: 'm#1', outcome: 'http', status: 500 },
        ]);
      }
    });

    it('answers model_misconfigured for a model without routes or whose provider lacks the capability', async () => {
      await assert.rejects(router().complete([], HI, never), routerError('model_misconfigured'));
      const anthropic = routeTo('http://127.0.0.1:9', { provider: 'anthropic' });
      await assert.rejects(router().embed([anthropic], { input: 'x' }, never), routerError('model_misconfigured'));
    });

    it('returns an upstream 400 as invalid_request with its message, without trying further routes', async () => {
      A.next({ status: 400, message: `temperature is out of range (see ${A.url}/docs)` });
      await assert.rejects(router().complete([a(), b()], HI, never), (e: unknown) => {
        routerError('invalid_request')(e);
        assert.match((e as Error).message, /temperature is out of range/);
        assert.ok(!(e as Error).message.includes('127.0.0.1'));
        return true;
      });
      assert.equal(B.requests.length, 0);
      A.next({ status: 400, message: "This model's maximum context length is 8192 tokens." });
      await assert.rejects(router().complete([a(), b()], HI, never), routerError('context_length_exceeded'));
    });

    it('fails over across providers (Anthropic overloaded → OpenAI-compatible)', async () => {
      const ant = await startAnthropicUpstream();
      try {
        ant.next({ status: 529 });
        const { route, result } = await router().complete([routeTo(ant, { id: 'm#0', provider: 'anthropic' }), b()], HI, never);
        assert.equal(route.id, 'm#1');
        assert.equal(result.choices[0]!.message.content, 'You said: hi');
        assert.equal(ant.requests.length, 1);
      } finally {
        await ant.close();
      }
    });

    it('passes over a route whose provider cannot honour the request, without a call or a health mark', async () => {
      const ant = await startAnthropicUpstream();
      try {
        const r = router({ failureThreshold: 1 });
        const claude = routeTo(ant, { id: 'm#0', provider: 'anthropic' });
        const seeded: ChatRequest = { ...HI, seed: 7 };
        const served = await r.complete([claude, b()], seeded, never);
        assert.equal(served.route.id, 'm#1');
        assert.equal(B.requests.at(-1)!.body.seed, 7, 'the parameter reaches the route that honours it');
        const streamed = await r.stream([claude, b()], { ...HI, n: 2 }, never);
        assert.equal(streamed.route.id, 'm#1');
        await drain(streamed.rest);
        assert.equal(ant.requests.length, 0, 'the passed-over route was never called');
        // Passing over is no failure: with a threshold of 1, the route still serves what it can.
        assert.deepEqual(r.health(), []);
        assert.equal((await r.complete([claude, b()], HI, never)).route.id, 'm#0');

        // No route honours it: the client's error, naming the parameter; misconfigured routes do not change that.
        const noKey = routeTo(A, { id: 'm#2', problem: 'environment variable X is not set' });
        await assert.rejects(r.complete([claude, noKey], seeded, never), (e: unknown) => {
          routerError('invalid_request')(e);
          assert.equal((e as RouterError).param, 'seed');
          assert.match((e as Error).message, /seed is not supported/);
          return true;
        });
        // A route that could have served it is down: retrying later can work, so 503.
        B.next({ status: 503 });
        await assert.rejects(r.complete([claude, b()], seeded, never), routerError('model_unavailable'));
        assert.equal(ant.requests.length, 1, 'only the plain request reached Anthropic');
      } finally {
        await ant.close();
      }
    });

    it('embeds with failover', async () => {
      A.next({ status: 503 });
      const { route, result } = await router().embed([a(), b()], { input: ['x', 'y'] }, never);
      assert.equal(route.id, 'm#1');
      assert.equal(result.data.length, 2);
    });
  });

  describe('stream', () => {
    const failuresBeforeFirstChunk: [string, FakeBehaviour][] = [
      ['503', { status: 503 }],
      ['closed right after the headers', { closeAfterChunks: 0 }],
      ['closed after the role chunk alone', { closeAfterChunks: 1 }],
      ['ended cleanly after the role chunk', { endAfterChunks: 1 }],
      ['a malformed first frame', { malformedAfterChunks: 0 }],
      ['an error frame after the role chunk', { errorAfterChunks: 1 }],
      ['silent after the role chunk (idle timeout)', { hangAfterChunks: 1 }],
      ['an SSE line over the limit', { longLineBytes: 20_000 }],
    ];
    for (const [what, behaviour] of failuresBeforeFirstChunk) {
      it(`fails over before the first chunk: ${what}`, async () => {
        A.next(behaviour);
        const { route, first, rest } = await router().stream([a(), b()], HI, never);
        assert.equal(route.id, 'm#1');
        assert.equal(first!.choices[0]!.delta.role, 'assistant');
        assert.equal(first!.choices[0]!.delta.content, 'You');
        const { chunks, error } = await drain(rest);
        assert.equal(error, null);
        assert.equal(text([first, ...chunks]), 'You said: hi');
        assert.deepEqual(chunks.at(-1)!.usage, { prompt_tokens: 1, completion_tokens: 3 });
      });
    }

    it('holds back an Anthropic role chunk too: a stream that dies after message_start fails over', async () => {
      const ant = await startAnthropicUpstream();
      try {
        ant.next({ closeAfterChunks: 3 }); // message_start, content_block_start, ping
        const { route, first } = await router().stream([routeTo(ant, { id: 'm#0', provider: 'anthropic' }), b()], HI, never);
        assert.equal(route.id, 'm#1');
        assert.equal(first!.choices[0]!.delta.content, 'You');
      } finally {
        await ant.close();
      }
    });

    it('ends the stream with an error after the delivered chunks when the route dies mid-stream, trying no other route', async () => {
      A.next({ closeAfterChunks: 3 });
      const { route, first, rest } = await router().stream([a(), b()], { messages: [USER('one two three')] }, never);
      assert.equal(route.id, 'm#0');
      const { chunks, error } = await drain(rest);
      assert.equal(text([first, ...chunks]), 'You said:');
      assert.ok(error instanceof UpstreamError && error.kind === 'connect', String(error));
      assert.ok(!(error as Error).message.includes('127.0.0.1'));
      assert.equal(B.requests.length, 0);
    });

    it('merges the role into a first chunk that only finishes (an empty answer)', async () => {
      A.next({ reply: '' });
      const { first, rest } = await router().stream([a()], HI, never);
      assert.equal(first!.choices[0]!.finish_reason, 'stop');
      assert.equal(first!.choices[0]!.delta.role, 'assistant');
      assert.equal((await drain(rest)).error, null);
    });

    it('answers model_unavailable when no route gets to a first chunk', async () => {
      A.next({ closeAfterChunks: 1 });
      B.next({ status: 502 });
      await assert.rejects(router().stream([a(), b()], HI, never), routerError('model_unavailable'));
    });
  });

  describe('aborts', () => {
    it('a client leaving mid-stream closes the upstream connection promptly', async () => {
      A.defaultBehaviour = { chunkDelayMs: 50 };
      const ac = new AbortController();
      const { first, rest } = await router().stream([a()], { messages: [USER('a b c d e f g h i j k l m n o p')] }, ac.signal);
      assert.ok(first);
      const it = rest[Symbol.asyncIterator]();
      assert.equal((await it.next()).done, false);
      ac.abort();
      const rec = A.requests[0]!;
      await within(rec.ended, 500, 'the upstream seeing the close');
      assert.equal(rec.closedEarly, true);
      await assert.rejects(it.next(), isAborted);
    });

    it('a client leaving while the upstream thinks closes the connection and rejects as aborted', async () => {
      A.next({ hang: true });
      const ac = new AbortController();
      const pending = router().complete([a(), b()], HI, ac.signal);
      await until(() => A.active === 1);
      ac.abort();
      await assert.rejects(within(pending, 500, 'the abort'), isAborted);
      await within(A.requests[0]!.ended, 500, 'the upstream seeing the close');
      assert.equal(B.requests.length, 0, 'no failover for a client that left');
    });

    it('a client leaving before reading the rest frees the route slot', async () => {
      const r = router({ maxQueueWaitMs: 1000 });
      A.next({ hangAfterChunks: 3 });
      const ac = new AbortController();
      await r.stream([a({ maxConcurrent: 1 })], HI, ac.signal);
      ac.abort();
      const { route } = await within(r.complete([a({ maxConcurrent: 1 })], HI, never), 900, 'the second call');
      assert.equal(route.id, 'm#0');
    });
  });

  describe('health', () => {
    it('skips a failing route during its cool-down, then tries it again', async () => {
      let now = 1_000;
      const r = router({ failureThreshold: 2, cooldownMs: 10_000, now: () => now });
      A.defaultBehaviour = { status: 503 };
      for (let i = 0; i < 4; i++) assert.equal((await r.complete([a(), b()], HI, never)).route.id, 'm#1');
      assert.equal(A.requests.length, 2, 'called twice, then cooling');
      assert.deepEqual(r.health(), [{ route: 'm#0', consecutiveFailures: 2, lastFailureAt: 1_000, coolingUntil: 11_000 }]);
      now += 10_001;
      await r.complete([a(), b()], HI, never);
      assert.equal(A.requests.length, 3, 'tried again after the cool-down');
      await r.complete([a(), b()], HI, never);
      assert.equal(A.requests.length, 3, 'one more failure starts a new cool-down');
      now += 10_001;
      A.defaultBehaviour = {};
      assert.equal((await r.complete([a(), b()], HI, never)).route.id, 'm#0');
      assert.deepEqual(r.health(), []);
    });

    it('counts a mid-stream failure against the route', async () => {
      const r = router({ failureThreshold: 1 });
      A.next({ closeAfterChunks: 3 });
      await drain((await r.stream([a(), b()], HI, never)).rest);
      assert.equal((await r.complete([a(), b()], HI, never)).route.id, 'm#1');
      assert.equal(A.requests.length, 1);
    });

    it('does not count the client request errors against the route', async () => {
      const r = router({ failureThreshold: 1 });
      A.next({ status: 400 });
      await assert.rejects(r.complete([a(), b()], HI, never), routerError('invalid_request'));
      assert.equal((await r.complete([a(), b()], HI, never)).route.id, 'm#0');
    });

    it('when every route is cooling, still tries the one that failed least recently, and only it', async () => {
      let now = 1_000;
      const r = router({ failureThreshold: 1, cooldownMs: 60_000, now: () => now });
      A.defaultBehaviour = { status: 503 };
      B.defaultBehaviour = { status: 503 };
      await assert.rejects(r.complete([a(), b()], HI, never), routerError('model_unavailable'));
      assert.deepEqual([A.requests.length, B.requests.length], [1, 1]);
      now = 2_000;
      await assert.rejects(r.complete([a(), b()], HI, never), routerError('model_unavailable'));
      assert.deepEqual([A.requests.length, B.requests.length], [2, 1]);
      now = 3_000;
      B.defaultBehaviour = {};
      const { route } = await r.complete([a(), b()], HI, never);
      assert.equal(route.id, 'm#1');
      assert.deepEqual([A.requests.length, B.requests.length], [2, 2]);
    });
  });

  describe('limits', () => {
    it('max_concurrent 2: six concurrent calls all succeed, never more than two at the upstream', async () => {
      A.defaultBehaviour = { delayMs: 80 };
      const r = router();
      const results = await Promise.all(Array.from({ length: 6 }, () => r.complete([a({ maxConcurrent: 2 })], HI, never)));
      assert.equal(results.length, 6);
      assert.equal(A.requests.length, 6);
      assert.equal(A.maxActive, 2);
    });

    it('a stream holds its slot until it ends; a call that waits too long moves to the next route', async () => {
      const r = router({ maxQueueWaitMs: 100 });
      A.next({ chunkDelayMs: 40 });
      const opened = await r.stream([a({ maxConcurrent: 1 })], { messages: [USER('a b c d e f')] }, never);
      const { route } = await r.complete([a({ maxConcurrent: 1 }), b()], HI, never);
      assert.equal(route.id, 'm#1');
      assert.equal(A.requests.length, 1);
      await drain(opened.rest);
      assert.equal((await r.complete([a({ maxConcurrent: 1 }), b()], HI, never)).route.id, 'm#0');
    });

    it('rpm spaces request starts evenly instead of bursting', async () => {
      const r = router();
      const began = Date.now();
      await Promise.all(Array.from({ length: 4 }, () => r.complete([a({ rpm: 600 })], HI, never)));
      // Starts are 100 ms apart. A request arrives at the fake upstream no earlier than it started,
      // but maybe later (a busy event loop can bring two arrivals together): so each arrival is
      // held against its earliest start, not against the arrival before it. A burst would arrive at once.
      const at = A.requests.map((x) => x.at - began);
      for (let i = 1; i < at.length; i++) assert.ok(at[i]! >= i * 100 - 10, `request ${i} arrived ${at[i]} ms after the first started`);
    });

    it('a call waiting for a slot gives up when its client leaves', async () => {
      const r = router({ maxQueueWaitMs: 5000 });
      A.next({ delayMs: 300 });
      const first = r.complete([a({ maxConcurrent: 1 })], HI, never);
      await until(() => A.active === 1);
      const ac = new AbortController();
      const queued = r.complete([a({ maxConcurrent: 1 })], HI, ac.signal);
      ac.abort();
      await assert.rejects(within(queued, 100, 'the queued abort'), isAborted);
      await first;
      assert.equal(A.requests.length, 1);
    });
  });
});

describe('resolveRoutes', () => {
  const ROUTE: RouteConfig = { provider: 'openai', base_url: 'https://api.example.com/v1', upstream_model: 'gpt-x' };

  it('resolves ids, keys inline or from the env object, limits and timeouts', () => {
    const routes = resolveRoutes(
      'chat-m',
      [
        { ...ROUTE, api_key: 'sk-inline', timeout_ms: 5000, max_concurrent: 4, rpm: 100 },
        { ...ROUTE, provider: 'anthropic', base_url: 'https://api.anthropic.com', api_key_env: 'ANT_KEY', timeout_ms: 10_000_000 },
        { ...ROUTE },
      ],
      { ANT_KEY: 'sk-ant-env' },
    );
    assert.deepEqual(routes, [
      {
        id: 'chat-m#0',
        provider: 'openai',
        baseUrl: 'https://api.example.com/v1',
        apiKey: 'sk-inline',
        upstreamModel: 'gpt-x',
        timeoutMs: 5000,
        maxConcurrent: 4,
        rpm: 100,
      },
      { id: 'chat-m#1', provider: 'anthropic', baseUrl: 'https://api.anthropic.com', apiKey: 'sk-ant-env', upstreamModel: 'gpt-x', timeoutMs: 600_000 },
      { id: 'chat-m#2', provider: 'openai', baseUrl: 'https://api.example.com/v1', apiKey: '', upstreamModel: 'gpt-x', timeoutMs: 60_000 },
    ]);
  });

  it('marks what cannot work instead of failing the load, and never reads process.env', () => {
    process.env.GW_TEST_ONLY_IN_PROCESS_ENV = 'sk-leaked';
    try {
      const routes = resolveRoutes(
        'm',
        [
          { ...ROUTE, api_key_env: 'GW_TEST_ONLY_IN_PROCESS_ENV' },
          { ...ROUTE, api_key_env: 'EMPTY' },
          { ...ROUTE, base_url: 'not a url' },
          { ...ROUTE, base_url: 'https://user:pw@api.example.com/v1' },
          { ...ROUTE, base_url: 'file:///etc/passwd' },
          { ...ROUTE, provider: 'azure' },
          { ...ROUTE, api_key_env: 'toString' },
        ],
        { EMPTY: '' },
      );
      for (const r of routes) assert.ok(r.problem, `${r.id} should be misconfigured`);
      assert.equal(routes[0]!.apiKey, '');
      assert.match(routes[0]!.problem!, /GW_TEST_ONLY_IN_PROCESS_ENV is not set/);
      assert.ok(routes.every((r) => !r.problem!.includes('sk-')));
    } finally {
      delete process.env.GW_TEST_ONLY_IN_PROCESS_ENV;
    }
  });
});

describe('RouteResolver', () => {
  const model = (over: Record<string, unknown> = {}) => ({
    _id: 'm',
    routes: [{ provider: 'openai', base_url: 'https://api.example.com/v1', upstream_model: 'gpt-x', api_key: 'k' }] as RouteConfig[],
    updated_at: new Date(1000),
    revision: 'r1',
    ...over,
  });

  it('resolves once per model version: the same routes (and their parsed URLs) until the model changes', () => {
    const resolver = new RouteResolver({});
    const first = resolver.routes(model());
    assert.equal(resolver.routes(model()), first, 'the same revision: the same objects');
    const url = routeUrl(first[0]!, '/chat/completions');
    assert.equal(url.href, 'https://api.example.com/v1/chat/completions');
    assert.equal(routeUrl(resolver.routes(model())[0]!, '/chat/completions'), url, 'parsed once per route');
    // A new revision with other routes, even at the same millisecond, is resolved afresh.
    const moved = resolver.routes(
      model({ revision: 'r2', routes: [{ provider: 'openai', base_url: 'https://other.example.com/v1', upstream_model: 'gpt-y', api_key: 'k' }] }),
    );
    assert.notEqual(moved, first);
    assert.equal(routeUrl(moved[0]!, '/chat/completions').host, 'other.example.com');
    // A model written before revisions existed: keyed by its update time and routes.
    const legacy = resolver.routes(model({ revision: undefined }));
    assert.equal(resolver.routes(model({ revision: undefined })), legacy);
    assert.notEqual(
      resolver.routes(model({ revision: undefined, routes: [{ provider: 'openai', base_url: 'https://third.example.com/v1', upstream_model: 'z' }] })),
      legacy,
    );
  });

  it('keeps at most max versions, dropping the oldest', () => {
    const resolver = new RouteResolver({}, 2);
    const a = resolver.routes(model({ revision: 'a' }));
    resolver.routes(model({ revision: 'b' }));
    resolver.routes(model({ revision: 'c' }));
    assert.notEqual(resolver.routes(model({ revision: 'a' })), a, 'a was dropped and resolved again');
  });
});

describe('createProviders', () => {
  it('registers every provider name with its capabilities', async () => {
    const http = new UpstreamHttp();
    try {
      const providers = createProviders(http);
      assert.deepEqual([...providers.keys()], [...PROVIDER_NAMES]);
      assert.ok(providers.get('openai')?.chat && providers.get('openai')?.embeddings);
      assert.ok(providers.get('anthropic')?.chat && !providers.get('anthropic')?.embeddings);
    } finally {
      await http.close();
    }
  });
});
