// Chat throughput, latency and CPU through the whole metered path, against baselines measured in
// the same run on this machine:
//   direct  — the fake OpenAI-compatible upstream itself;
//   gateway — our gateway (separate process, embedded store), built and started as `npm start`
//             does (the esbuild bundle, dist/server.js): key check, limits, hold, upstream,
//             settle, usage record;
//   portkey — the Portkey gateway (@portkey-ai/gateway, bench/portkey) against the same upstream;
//   floor   — bench/bare-proxy.ts: fastify + undici passing calls through with nothing else, the
//             least any gateway on this stack can cost here (the gateway's cost above it is metering).
// Non-streaming: autocannon at 50 connections and at 1 connection. Streaming: time to first chunk.
// CPU per request from /proc/<pid>/stat of each server process, and each server's peak RSS.
// Prints figures and ratios only.
//
//   npx tsx bench/chat.ts [--seconds 10] [--rounds 1] [--no-portkey] [--only json-50|json-1|stream-50|stream-1] [--profile DIR]
// --rounds N runs the whole series N times over and prints medians (ranges in brackets), each
// ratio being the median of the rounds' own ratios;
// --only runs just that one load (no latency series), for A/B runs;
// --profile DIR starts the gateway and the floor with --cpu-prof, writing their CPU profiles to
// DIR/gateway and DIR/floor on exit;
// --json FILE writes the figures bench:check holds against bench/budget.json (the whole series,
// medians over rounds): JSON and streaming c=50 as % of the floor, the mean latency the gateway adds
// over the floor at one connection, the gateway's peak RSS.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Pool, type Dispatcher } from 'undici';
import { ADMIN, cpuSeconds, json, median, payingAccount, peakRssMiB, ROOT, startGatewayProcess, startLogged, statCpu } from './process.ts';

const args = process.argv.slice(2);
const SECONDS = Number(args[args.indexOf('--seconds') + 1]) || 10;
const WITH_PORTKEY = !args.includes('--no-portkey');
/** --only json-50 | json-1 | stream-50 | stream-1: just that autocannon load. */
const ONLY_MATCH = args.includes('--only') ? /^(json|stream)-(50|1)$/.exec(args[args.indexOf('--only') + 1] ?? '') : undefined;
if (ONLY_MATCH === null) throw new Error('--only takes json-50, json-1, stream-50 or stream-1');
const ONLY = ONLY_MATCH ? Number(ONLY_MATCH[2]) : undefined;
const ONLY_STREAM = ONLY_MATCH?.[1] === 'stream';
const PROFILE_DIR = args.includes('--profile') ? args[args.indexOf('--profile') + 1] : undefined;
const JSON_OUT = args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined;
const THREADS = args.includes('--threads'); // CPU per request split by thread (main, LMDB writer, libuv pool, GC...)
/** --rounds N: the whole series N times over; figures are medians over rounds, ratios medians of each round's. */
const ROUNDS = Math.max(1, Number(args.includes('--rounds') ? args[args.indexOf('--rounds') + 1] : 1) || 1);
/** One temporary directory per run: the gateway's data and every server's log, removed at the end. */
const RUN_DIR = mkdtempSync(join(tmpdir(), 'bench-chat-'));

// ---------- the fake upstream: fixed replies, as fast as node:http goes ----------
function fakeUpstream(): Promise<{ server: Server; url: string }> {
  const reply = JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1,
    model: 'up',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Hello from the bench upstream.' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
  });
  const chunk = (content: string) =>
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`;
  const stream =
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] })}\n\n` +
    ['Hello', ' from', ' the', ' bench', ' upstream.'].map(chunk).join('') +
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'up', choices: [], usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 } })}\n\n` +
    'data: [DONE]\n\n';
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      if (body.includes('"stream":true')) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(stream);
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(reply) });
        res.end(reply);
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const a = server.address() as { port: number };
      resolve({ server, url: `http://127.0.0.1:${a.port}` });
    }),
  );
}

/** User and system CPU seconds per thread name (/proc/<pid>/task/<tid>/stat; threads of one name summed). */
function cpuByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue;
    } // thread ended
    const name = Number(tid) === pid ? 'main' : stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const { user, sys } = statCpu(stat);
    out.set(`${name} user`, (out.get(`${name} user`) ?? 0) + user);
    out.set(`${name} sys`, (out.get(`${name} sys`) ?? 0) + sys);
  }
  return out;
}

/** `--cpu-prof` flags writing a server's profile to PROFILE_DIR/<name>, when profiling. */
function profileFlags(name: string): string[] {
  return PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE_DIR, name)}`] : [];
}

async function startOurGateway(upstream: string) {
  const { child, url } = await startGatewayProcess(RUN_DIR, { nodeFlags: profileFlags('gateway') });
  await json('PUT', `${url}/admin/models/bench-chat`, ADMIN, {
    type: 'llm',
    owned_by: 'bench',
    context_window: 128_000,
    max_output_tokens: 256,
    pricing: { input_cents_per_mtok: 15, output_cents_per_mtok: 60 },
    routes: [{ provider: 'openai', base_url: `${upstream}/v1`, api_key: 'sk-upstream', upstream_model: 'up', max_concurrent: 1000 }],
  });
  const { key } = await payingAccount(url, 100_000_000);
  return { child, url, key };
}

async function startFloor(upstream: string): Promise<{ child: ChildProcess; url: string }> {
  const { child, hit } = await startLogged(
    [...profileFlags('floor'), '--import', 'tsx', 'bench/bare-proxy.ts'],
    { cwd: ROOT, env: { ...process.env, UPSTREAM: upstream }, log: join(RUN_DIR, 'floor.log') },
    (l) => (l.startsWith('listening ') ? l.slice('listening '.length) : null),
    'bare proxy',
  );
  return { child, url: hit };
}

async function startPortkey(): Promise<{ child: ChildProcess; url: string }> {
  const dir = join(ROOT, 'bench/portkey');
  if (!existsSync(join(dir, 'node_modules'))) {
    const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm ci in bench/portkey failed');
  }
  const port = 18787 + Math.floor(Math.random() * 1000);
  const { child } = await startLogged(
    ['--import', './loopback.mjs', 'node_modules/@portkey-ai/gateway/build/start-server.js', `--port=${port}`, '--headless'],
    { cwd: dir, log: join(RUN_DIR, 'portkey.log') },
    (l) => (l.includes('Ready') || l.includes('running at') ? l : null),
    'portkey',
  );
  return { child, url: `http://127.0.0.1:${port}` };
}

interface Target {
  name: string;
  url: string;
  path: string;
  headers: Record<string, string>;
  model: string;
  pid?: number;
}

interface Row {
  target: string;
  mode: string;
  rps: number;
  p50: number;
  p99: number;
  mean: number;
  cpuMsPerReq: number | null;
  errors: number;
}

async function load(t: Target, connections: number, stream: boolean): Promise<Row> {
  const body = JSON.stringify({
    model: t.model,
    messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
    max_tokens: 32,
    ...(stream ? { stream: true } : {}),
  });
  const opts = {
    url: t.url + t.path,
    method: 'POST' as const,
    headers: { 'content-type': 'application/json', ...t.headers },
    body,
    connections,
    duration: SECONDS,
    pipelining: 1,
  };
  await autocannon({ ...opts, duration: 2 }); // warm-up
  const cpu0 = t.pid ? cpuSeconds(t.pid) : 0;
  const threads0 = THREADS && t.pid && t.name !== 'direct' ? cpuByThread(t.pid) : null;
  const r = await autocannon(opts);
  const cpu1 = t.pid ? cpuSeconds(t.pid) : 0;
  const done = r.requests.total;
  if (threads0 && done) {
    const parts = [...cpuByThread(t.pid!)].map(([name, s]) => [name, ((s - (threads0.get(name) ?? 0)) * 1e6) / done] as const).filter(([, us]) => us >= 1);
    console.log(
      `  ${t.name} ${stream ? 'stream' : 'json'} c=${connections} CPU µs/req by thread: ${parts
        .sort((a, b) => b[1] - a[1])
        .map(([n, us]) => `${n} ${us.toFixed(0)}`)
        .join(', ')}`,
    );
  }
  return {
    target: t.name,
    mode: `${stream ? 'stream' : 'json'} c=${connections}`,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    mean: r.latency.average,
    cpuMsPerReq: t.pid && done ? ((cpu1 - cpu0) * 1000) / done : null,
    errors: r.errors + r.non2xx,
  };
}

type Latency = { p50: number; p99: number; mean: number };

/**
 * Sequential requests on one connection (50 warm-up ones first), each timed by `time` from its
 * start with performance.now: autocannon's histogram keeps whole milliseconds, too coarse for what
 * a gateway adds at one connection (it records 0.9 ms as 0).
 */
async function overOneConnection(t: Target, n: number, stream: boolean, time: (res: Dispatcher.ResponseData, t0: number) => Promise<number>): Promise<Latency> {
  const pool = new Pool(t.url, { connections: 1 });
  const body = JSON.stringify({
    model: t.model,
    messages: [{ role: 'user', content: 'Say hello to the benchmark.' }],
    max_tokens: 32,
    ...(stream ? { stream: true } : {}),
  });
  const times: number[] = [];
  for (let i = 0; i < n + 50; i++) {
    const t0 = performance.now();
    const res = await pool.request({ method: 'POST', path: t.path, headers: { 'content-type': 'application/json', ...t.headers }, body });
    const took = await time(res, t0);
    if (res.statusCode !== 200) throw new Error(`${t.name} answered ${res.statusCode}${stream ? ' to a stream' : ''}`);
    if (i >= 50) times.push(took);
  }
  await pool.close();
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(n * 0.5)]!, p99: times[Math.floor(n * 0.99)]!, mean: times.reduce((a, b) => a + b, 0) / n };
}

/** Whole-response latency of sequential JSON requests. */
function sequential(t: Target, n: number): Promise<Latency> {
  return overOneConnection(t, n, false, async (res, t0) => {
    await res.body.text();
    return performance.now() - t0;
  });
}

/** Time to first chunk (first `data:` bytes) over sequential streaming requests. */
function firstChunk(t: Target, n: number): Promise<Latency> {
  return overOneConnection(t, n, true, async (res, t0) => {
    let first = 0;
    for await (const part of res.body) {
      if (!first && part.toString().includes('data:')) first = performance.now() - t0;
    }
    return first;
  });
}

const up = await fakeUpstream();
const gw = await startOurGateway(up.url);
const floor = await startFloor(up.url);
const pk = WITH_PORTKEY ? await startPortkey().catch((err) => (console.error(`portkey not started: ${err.message}`), null)) : null;
try {
  const targets: Target[] = [
    { name: 'direct', url: up.url, path: '/v1/chat/completions', headers: { authorization: 'Bearer sk-upstream' }, model: 'up', pid: process.pid },
    { name: 'gateway', url: gw.url, path: '/v1/chat/completions', headers: { authorization: `Bearer ${gw.key}` }, model: 'bench-chat', pid: gw.child.pid! },
    { name: 'floor', url: floor.url, path: '/v1/chat/completions', headers: {}, model: 'up', pid: floor.child.pid! },
  ];
  if (pk) {
    targets.push({
      name: 'portkey',
      url: pk.url,
      path: '/v1/chat/completions',
      headers: { authorization: 'Bearer sk-upstream', 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${up.url}/v1` },
      model: 'up',
      pid: pk.child.pid!,
    });
  }
  // Each round runs every load on every target back to back, so a round's ratios are measured in
  // one period of the machine; with several rounds, figures are medians and ratios the median of
  // each round's ratio (the machine's speed drifts ±25% over minutes here).
  const rounds: Row[][] = [];
  const latencies: Map<string, { seq: Latency; first: Latency }>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (ROUNDS > 1) console.error(`round ${round + 1} of ${ROUNDS}...`);
    const rows: Row[] = [];
    for (const stream of ONLY ? [ONLY_STREAM] : [false, true]) {
      for (const c of ONLY ? [ONLY] : [50, 1]) {
        for (const t of targets) rows.push(await load(t, c, stream));
      }
    }
    rounds.push(rows);
    if (!ONLY) latencies.push(await latencySeries(targets));
  }
  const get = (rows: Row[], target: string, mode: string) => rows.find((r) => r.target === target && r.mode === mode)!;
  const across = <T>(f: (rows: Row[], i: number) => T) => rounds.map(f);

  console.log(
    `\nChat through the metered path: ${SECONDS}s per run, ${ROUNDS} round(s), node ${process.version}, 2 cores shared by load generator, upstream and gateways`,
  );
  console.log(
    '(direct CPU is the bench process itself: upstream + load generator; not comparable)' +
      (ROUNDS > 1 ? '\n(medians over rounds; req/s and CPU ranges in brackets)' : '') +
      '\n',
  );
  console.log('target   mode          req/s     p50 ms  p99 ms  mean ms  CPU ms/req  errors');
  for (const r of rounds[0]!) {
    const all = across((rows) => get(rows, r.target, r.mode));
    const rps = all.map((x) => x.rps);
    const cpus = all.map((x) => x.cpuMsPerReq).filter((x): x is number => x !== null);
    const hasCpu = r.target !== 'direct' && cpus.length > 0;
    const cpu = hasCpu ? median(cpus).toFixed(3).padStart(10) : '     -';
    console.log(
      `${r.target.padEnd(8)} ${r.mode.padEnd(12)} ${median(rps).toFixed(0).padStart(7)}  ${String(median(all.map((x) => x.p50))).padStart(7)} ${String(median(all.map((x) => x.p99))).padStart(7)} ${median(
        all.map((x) => x.mean),
      )
        .toFixed(2)
        .padStart(8)}  ${cpu}  ${all.reduce((n, x) => n + x.errors, 0)}` + (ROUNDS > 1 ? `  [${range(rps, 0)}${hasCpu ? `; ${range(cpus, 3)}` : ''}]` : ''),
    );
  }
  console.log(`\nRatios (${ROUNDS > 1 ? "median of each round's, range in brackets" : 'same run'}):`);
  const ratio = (f: (rows: Row[]) => number, digits: number, unit: string) => {
    const values = across(f);
    return `${median(values).toFixed(digits)}${unit}` + (ROUNDS > 1 ? ` [${range(values, digits)}]` : '');
  };
  for (const mode of ONLY === 1 ? [] : ONLY ? [ONLY_STREAM ? 'stream c=50' : 'json c=50'] : ['json c=50', 'stream c=50']) {
    const rps = (rows: Row[], target: string) => get(rows, target, mode).rps;
    console.log(
      `  ${mode}: gateway throughput = ${ratio((rows) => (rps(rows, 'gateway') / rps(rows, 'direct')) * 100, 1, '%')} of direct, ` +
        `${ratio((rows) => (rps(rows, 'gateway') / rps(rows, 'floor')) * 100, 0, '%')} of the floor (floor = ${ratio((rows) => (rps(rows, 'floor') / rps(rows, 'direct')) * 100, 1, '%')} of direct)` +
        (pk ? `; gateway / portkey = ${ratio((rows) => rps(rows, 'gateway') / rps(rows, 'portkey'), 1, 'x')}` : ''),
    );
  }
  if (ONLY !== 1 && !ONLY_STREAM) {
    const cpu = (target: string) => ratio((rows) => get(rows, target, 'json c=50').cpuMsPerReq ?? NaN, 3, ' ms');
    console.log(`  CPU per request (json c=50): gateway ${cpu('gateway')}, floor ${cpu('floor')}`);
  }
  if (latencies.length > 0) printLatencies(targets, latencies, !!pk);

  // Peak resident memory of each server over the whole run (/proc/<pid>/status VmHWM).
  const peaks = targets.filter((t) => t.name !== 'direct' && t.pid !== undefined).map((t) => `${t.name} ${peakRssMiB(t.pid!)} MiB`);
  console.log(`\nPeak RSS: ${peaks.join(', ')}`);
  if (JSON_OUT) {
    if (ONLY) throw new Error('--json takes the whole series: not with --only');
    const ofFloor = (mode: string) => median(across((rows) => (get(rows, 'gateway', mode).rps / get(rows, 'floor', mode).rps) * 100));
    const added = median(latencies.map((r) => r.get('gateway')!.seq.mean - r.get('floor')!.seq.mean));
    writeFileSync(
      JSON_OUT,
      JSON.stringify({
        json50FloorPct: ofFloor('json c=50'),
        stream50FloorPct: ofFloor('stream c=50'),
        json1AddedMsOverFloor: added,
        gatewayPeakRssMiB: peakRssMiB(gw.child.pid!),
      }),
    );
  }
} finally {
  // SIGTERM lets the gateway and the floor close (and write their profiles), with 10 s to do it;
  // Portkey is just killed.
  const exited = [gw.child, floor.child].map((c) => {
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    setTimeout(() => c.kill('SIGKILL'), 10_000).unref();
    return gone;
  });
  pk?.child.kill('SIGKILL');
  up.server.close();
  await Promise.all(exited);
  rmSync(RUN_DIR, { recursive: true, force: true });
}

/** Whole-response latency (1,000 sequential JSON requests) and time to first chunk (300 streams), per target. */
async function latencySeries(targets: Target[]): Promise<Map<string, { seq: Latency; first: Latency }>> {
  // Every target's JSON series first, then every target's streams, as the output reads.
  const seq = new Map<string, Latency>();
  for (const t of targets) seq.set(t.name, await sequential(t, 1000));
  const out = new Map<string, { seq: Latency; first: Latency }>();
  for (const t of targets) out.set(t.name, { seq: seq.get(t.name)!, first: await firstChunk(t, 300) });
  return out;
}

function printLatencies(targets: Target[], rounds: Map<string, { seq: Latency; first: Latency }>[], pk: boolean) {
  const med = (name: string, which: 'seq' | 'first', k: keyof Latency) => median(rounds.map((r) => r.get(name)![which][k])).toFixed(2);
  console.log('\nJSON, whole-response latency (one connection, 1,000 sequential requests):');
  for (const t of targets)
    console.log(`  ${t.name.padEnd(8)} p50 ${med(t.name, 'seq', 'p50')} ms  p99 ${med(t.name, 'seq', 'p99')} ms  mean ${med(t.name, 'seq', 'mean')} ms`);
  const added = (name: string) => {
    const values = rounds.map((r) => r.get(name)!.seq.mean - r.get('direct')!.seq.mean);
    return `${median(values).toFixed(2)} ms` + (rounds.length > 1 ? ` [${range(values, 2)}]` : '');
  };
  console.log(`  mean latency added over direct: gateway ${added('gateway')}, floor ${added('floor')}` + (pk ? `, portkey ${added('portkey')}` : ''));
  console.log('\nStreaming, time to first chunk (one connection, 300 sequential requests):');
  for (const t of targets)
    console.log(`  ${t.name.padEnd(8)} p50 ${med(t.name, 'first', 'p50')} ms  p99 ${med(t.name, 'first', 'p99')} ms  mean ${med(t.name, 'first', 'mean')} ms`);
}

function range(values: number[], digits: number): string {
  return `${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)}`;
}
