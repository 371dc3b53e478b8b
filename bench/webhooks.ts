// Webhook delivery throughput of one process, and isolation from a receiver that hangs.
// The real subsystem (outbox on the embedded store in a temp dir with real fsyncs, endpoint actors
// in the actor runtime, signed POSTs over loopback) against receivers on loopback:
//  1. events/s from emit to a fast receiver's 2xx, with 1 and with 20 endpoints;
//  2. the same 20 fast endpoints while a 21st endpoint's receiver never answers (each of its
//     deliveries waits the whole 5 s): the fast endpoints' rate and latency should not move.
// Prints figures; no pass/fail (timed assertions flake on shared machines).
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ActorRuntime } from '../src/actors/runtime.ts';
import { loadConfig } from '../src/config.ts';
import { createMetrics } from '../src/http/metrics.ts';
import { openEmbeddedStore } from '../src/store/embedded/store.ts';
import { Webhooks } from '../src/webhooks/index.ts';

const silent = pino({ level: 'silent' });
const dir = await mkdtemp(join(tmpdir(), 'webhooks-bench-'));
const store = await openEmbeddedStore({ dir });
const runtime = new ActorRuntime({ store, logger: silent, instanceId: 'bench' });
const metrics = createMetrics();
const config = { ...loadConfig({}).webhooks, allowPrivateNetworks: true, allowHttp: true, maxQueuedPerEndpoint: 1_000_000 };
const webhooks = new Webhooks({
  config,
  store,
  runtime,
  metrics: { deliveries: metrics.webhookDeliveries, dropped: metrics.webhookDropped, disabled: metrics.webhookDisabled },
  logger: silent,
  now: Date.now,
});
runtime.register(webhooks.kind);
await webhooks.init();
await runtime.start();
webhooks.start();
const portal = webhooks.portal(async (userId) => ({ ownerType: 'user', ownerId: userId, role: null }));

/** Arrival times (performance.now) of each event id at the fast receiver. */
const arrivals = new Map<string, number>();
function receiver(hang: boolean): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (hang) return; // never answers
      const id = /"id":"([^"]+)"/.exec(Buffer.concat(chunks).toString())?.[1];
      if (id) arrivals.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` })),
  );
}

const fast = await receiver(false);
const slow = await receiver(true);
let nextUser = 1;
async function endpoints(n: number, url: string): Promise<number[]> {
  const users: number[] = [];
  for (let i = 0; i < n; i++) {
    const user = nextUser++;
    await portal.create(user, { url, events: ['topup'] });
    users.push(user);
  }
  return users;
}

/** Emits `total` topup events spread over `users`, `inFlight` emits at a time; waits for all arrivals. */
async function run(label: string, users: number[], total: number, inFlight = 64): Promise<void> {
  arrivals.clear();
  const emitted = new Map<number, number>();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) {
        const i = next++;
        emitted.set(i, performance.now());
        await webhooks.sink.emit({
          event: 'topup',
          owner: { type: 'user', id: users[i % users.length]! },
          fields: { user_id: users[i % users.length]!, amount_cents: i, new_balance_cents: i },
        });
      }
    }),
  );
  const emitMs = performance.now() - t0;
  while (arrivals.size < total) await new Promise((r) => setTimeout(r, 5));
  const ms = performance.now() - t0;
  const latencies = [...arrivals.values()].map((at) => at - t0).sort((a, b) => a - b);
  console.log(
    `${label.padEnd(58)} ${String(total).padStart(6)} events  ${(total / (ms / 1000)).toFixed(0).padStart(6)} events/s  ` +
      `(emit ${(emitMs / total).toFixed(3)} ms/event; last arrival ${ms.toFixed(0)} ms, median ${latencies[Math.floor(latencies.length / 2)]!.toFixed(0)} ms)`,
  );
}

const one = await endpoints(1, fast.url);
const twenty = await endpoints(20, fast.url);
const hanging = await endpoints(1, slow.url);
await run('warm-up', twenty, 500);
await run('1 endpoint → fast receiver', one, 2000);
await run('20 endpoints → fast receiver', twenty, 4000);
// The hanging endpoint gets a queue of its own: it holds one batch of 10 for 5 s at a time.
for (let i = 0; i < 30; i++) {
  await webhooks.sink.emit({
    event: 'topup',
    owner: { type: 'user', id: hanging[0]! },
    fields: { user_id: hanging[0]!, amount_cents: i, new_balance_cents: i },
  });
}
await run('20 endpoints → fast receiver, a 21st receiver hanging 5 s', twenty, 4000);
await run('1 endpoint → fast receiver, a receiver hanging 5 s', one, 2000);
const hangingView = await portal.get(hanging[0]!, 1 + one.length + twenty.length);
console.log(`hanging endpoint meanwhile: ${hangingView.consecutive_failures} consecutive failures (timeouts), status ${hangingView.status}`);

fast.server.closeAllConnections();
slow.server.closeAllConnections();
fast.server.close();
slow.server.close();
await webhooks.close();
await runtime.stop();
await store.close();
await rm(dir, { recursive: true, force: true });
