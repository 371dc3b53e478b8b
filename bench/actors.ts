// The actor runtime under the loads the speech actors bring, on the real embedded store (LMDB,
// real fsyncs) in a temp dir. Ratios are against baselines measured in the same run.
//  1. Persistence cost: 200 actors × 50 events/s (10 000 events/s) for 8 s each, under the
//     checkpoint policy (1 s interval), under a no-write floor (the same events, checkpoint
//     interval longer than the run) and under every-event; CPU of the process as % of one core,
//     writes/s, achieved events/s. Persistence cost = checkpoint − floor.
//  2. POST /v1/understand at one connection (the whole metered path over loopback HTTP): p50/p99,
//     beside GET /v1/models on the same connection (auth only) as the floor.
//  3. Inbox: `ask` of an actor held by this instance (the floor), of one held by another runtime
//     instance on the same store with in-process wake-ups, and with the polling fallback only.
// Prints figures; no pass/fail (timed assertions flake on shared machines).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { Pool } from 'undici';
import type { PersistencePolicy } from '../src/actors/kinds.ts';
import { ActorRuntime } from '../src/actors/runtime.ts';
import { LocalWakeups } from '../src/actors/wakeups.ts';
import { openEmbeddedStore } from '../src/store/embedded/store.ts';
import type { Store } from '../src/store/port.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway } from '../test/helper.ts';
import { streamKind } from '../test/actors/stream-helpers.ts';

const silent = pino({ level: 'silent' });
const ACTORS = 200;
const PER_SECOND = 50;
const SECONDS = 8;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

async function withStore<T>(fn: (store: Store) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'actors-bench-'));
  const store = await openEmbeddedStore({ dir });
  try {
    return await fn(store);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

async function sustained(label: string, policy: PersistencePolicy) {
  return withStore(async (store) => {
    const rt = new ActorRuntime({ store, logger: silent, instanceId: 'bench' });
    rt.register(streamKind({ persistence: policy }));
    await rt.start();
    const ids = Array.from({ length: ACTORS }, (_, i) => `s${i}`);
    for (const id of ids) await rt.spawn('stream', id, { id, account: 1, open: true });
    const revBefore = await totalRevisions(store);
    const wait = policy.mode === 'every-event' ? 'durable' : 'applied';
    let sent = 0;
    let done = 0;
    let inFlight = 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const timer = setInterval(() => {
      for (const id of ids) {
        if (inFlight > ACTORS * 10) continue; // the store cannot keep up: do not queue without bound
        sent++;
        inFlight++;
        void rt.send('stream', id, { type: 'tick' }, { wait }).then(() => {
          done++;
          inFlight--;
        });
      }
    }, 1000 / PER_SECOND);
    await sleep(SECONDS * 1000);
    clearInterval(timer);
    while (inFlight > 0) await sleep(5);
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const writes = (await totalRevisions(store)) - revBefore;
    await rt.stop();
    const cpuPct = ((cpu.user + cpu.system) / 1000 / wallMs) * 100;
    console.log(
      `${label.padEnd(34)} events ${(done / (wallMs / 1000)).toFixed(0).padStart(6)}/s (offered ${(sent / (wallMs / 1000)).toFixed(0)})   writes ${(writes / (wallMs / 1000)).toFixed(0).padStart(6)}/s   CPU ${cpuPct.toFixed(1).padStart(5)}% of one core`,
    );
    return { cpuPct, writes, done };
  });
}

async function totalRevisions(store: Store): Promise<number> {
  const docs = await store.collection('actors').find({}, { projection: { rev: 1 }, limit: 100_000 });
  return docs.reduce((n, d) => n + (d.rev as number), 0);
}

async function understandLatency() {
  const gw = await startTestGateway({ logLevel: 'silent' });
  try {
    const user = await signup(gw.url);
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: 1_000_000 } });
    const key = await createKey(gw.url, user.token, { name: 'bench' });
    const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
    const pool = new Pool(gw.url, { connections: 1 });
    const turns = [
      'The ATM did not dispense cash but Rs. 5,000 was debited',
      'paise nahi nikle par account se kat gaye',
      'net nahi chal raha',
      'call baar baar kat rahi hai',
    ];
    const measure = async (n: number, req: (i: number) => { method: 'GET' | 'POST'; path: string; body?: string }) => {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        const res = await pool.request({ ...req(i), headers });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        ms.push(performance.now() - t);
      }
      return ms.sort((a, b) => a - b);
    };
    const understand = (i: number) => ({
      method: 'POST' as const,
      path: '/v1/understand',
      body: JSON.stringify({ model: 'intent-demo', session_id: 'bench-1', text: turns[i % turns.length] }),
    });
    await measure(500, understand); // warm-up
    const u = await measure(3000, understand);
    const m = await measure(3000, () => ({ method: 'GET' as const, path: '/v1/models' }));
    console.log(
      `POST /v1/understand, one connection   p50 ${pct(u, 50).toFixed(2)} ms   p99 ${pct(u, 99).toFixed(2)} ms   (GET /v1/models floor: p50 ${pct(m, 50).toFixed(2)} ms, p99 ${pct(m, 99).toFixed(2)} ms; ratio p50 ${(pct(u, 50) / pct(m, 50)).toFixed(2)}x)`,
    );
    await pool.close();
  } finally {
    await gw.destroy();
  }
}

async function inboxLatency(label: string, opts: { remote: boolean; wakeups: boolean; pollMs: number }) {
  return withStore(async (store) => {
    const wakeups = opts.wakeups ? new LocalWakeups() : undefined;
    const make = async (instanceId: string) => {
      const rt = new ActorRuntime({ store, logger: silent, instanceId, inboxPollMs: opts.pollMs, ...(wakeups ? { wakeups } : {}) });
      rt.register(streamKind({ persistence: { mode: 'checkpoint', intervalMs: 1000 } }));
      await rt.start();
      return rt;
    };
    const owner = await make('A');
    const sender = opts.remote ? await make('B') : owner;
    await owner.spawn('stream', 'x', { id: 'x', account: 1, open: true });
    const ms: number[] = [];
    for (let i = 0; i < 300; i++) {
      const t = performance.now();
      await sender.ask('stream', 'x', { type: 'whoami' }, { wait: 'applied' });
      ms.push(performance.now() - t);
    }
    ms.sort((a, b) => a - b);
    if (sender !== owner) await sender.stop();
    await owner.stop();
    console.log(`${label.padEnd(44)} p50 ${pct(ms, 50).toFixed(2).padStart(7)} ms   p99 ${pct(ms, 99).toFixed(2).padStart(7)} ms`);
    return pct(ms, 50);
  });
}

console.log(`\nActor runtime (node ${process.version}, embedded store; ${ACTORS} actors × ${PER_SECOND} events/s for ${SECONDS} s each)\n`);
const floor = await sustained('floor (no writes during the run)', { mode: 'checkpoint', intervalMs: 3_600_000 });
const checkpoint = await sustained('checkpoint, 1 s interval', { mode: 'checkpoint', intervalMs: 1_000 });
const every = await sustained('every-event (durable each)', { mode: 'every-event' });
console.log(
  `\npersistence cost, checkpoint: ${(checkpoint.cpuPct - floor.cpuPct).toFixed(1)}% of one core (target < 5%); every-event: ${(every.cpuPct - floor.cpuPct).toFixed(1)}% for ${(every.done / SECONDS).toFixed(0)} events/s\n`,
);
if (!process.argv.includes('--persistence-only')) await understandLatency();
if (process.argv.includes('--persistence-only')) process.exit(0);
console.log('');
const local = await inboxLatency('ask, actor held here (floor)', { remote: false, wakeups: true, pollMs: 1000 });
const woken = await inboxLatency('ask via inbox, other instance, wake-ups', { remote: true, wakeups: true, pollMs: 1000 });
const polled = await inboxLatency('ask via inbox, other instance, poll 100 ms', { remote: true, wakeups: false, pollMs: 100 });
console.log(`\ninbox p50 over the local floor: wake-ups ${(woken / local).toFixed(1)}x, polling ${(polled / local).toFixed(1)}x`);
