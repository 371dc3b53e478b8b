// The metered path's store work per request, on the embedded store in a temp dir (real fsyncs):
// admit (rpm + tpd) → payerFor → hold → settle (usage buffered and flushed in batches), with a
// number of requests in flight on one organization wallet, as a busy gateway would have.
// Prints per request: main-thread busy time (event-loop utilization: the gateway's own CPU), process
// CPU (all threads: LMDB's commit thread and the kernel's page flushing included) and wall time;
// no pass/fail (timed assertions flake on shared machines). ONLY=<n> runs one concurrency level;
// CONFIG_FILE=<json> overlays the configuration as the gateway's does (e.g. `{"billing":
// {"durableWalletWrites": true}}` to compare durable with lazy wallet writes).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { BillingService } from '../src/billing/service.ts';
import { openEmbeddedStore } from '../src/store/embedded/store.ts';
import { noAccountWallets } from '../src/identity/account-wallets.ts';
import { AccountService } from '../src/identity/accounts.ts';
import { identityDirectory } from '../src/identity/directory.ts';
import { InvitationRecords } from '../src/identity/invitation-records.ts';
import { OrgService } from '../src/identity/orgs.ts';
import type { ApiKeyPrincipal } from '../src/identity/keys.ts';

const dir = await mkdtemp(join(tmpdir(), 'billing-bench-'));
const store = await openEmbeddedStore({ dir });
const fullConfig = loadConfig(process.env.CONFIG_FILE ? { CONFIG_FILE: process.env.CONFIG_FILE } : {});
const config = fullConfig.billing;
console.log(
  `wallet writes: ${config.durableWalletWrites ? 'durable' : 'lazy'}; usage flush every ${config.usageFlushIntervalMs} ms or ${config.usageFlushMaxRecords} records`,
);
// Payer resolution reads the accounts below through identity, as the gateway's does.
const accounts = new AccountService(store, fullConfig.auth, noAccountWallets, Date.now);
const orgs = new OrgService(store, accounts, fullConfig.orgs, new InvitationRecords(store, 0, Date.now), noAccountWallets, Date.now);
const billing = new BillingService({ store, identity: identityDirectory(accounts, orgs), config, events: { emit: async () => {} }, now: Date.now });
await billing.init();
billing.start();

await store.collection('users').insertOne({ _id: 1, email: 'o@example.com', kyc_verified: true, created_at: new Date() });
await store.collection('users').insertOne({ _id: 2, email: 'm@example.com', kyc_verified: false, created_at: new Date() });
await store.collection('orgs').insertOne({ _id: 1, name: 'acme', owner_id: 1, created_at: new Date() });
await store.collection('memberships').insertOne({ _id: 2, org_id: 1, role: 'member', joined_at: new Date() });
await store.collection('wallets').insertOne({ _id: 'org:1', owner_type: 'org', owner_id: 1, balance_uc: 1e15, held_uc: 0, created_at: new Date() });

const keys: ApiKeyPrincipal[] = Array.from({ length: 20 }, (_, i) => ({
  keyId: i + 1,
  jti: `j${i}`,
  prefix: `sk-live-${i}`,
  userId: 2,
  scopes: ['*'],
  rpm: 1e9,
  tpd: 1e12,
  cpd: 1e9,
  cpm: 1e9,
}));

async function metered(i: number): Promise<void> {
  // Each call starts on an event-loop turn of its own, as a request read from a socket does: without
  // it the calls in flight ran as one chain of microtasks, starving timers and I/O completions (the
  // store's delayed writes, commits, the usage flush) until the run ended.
  await new Promise((resolve) => setImmediate(resolve));
  const p = keys[i % keys.length]!;
  await billing.admit(p);
  const payer = await billing.payerFor(p);
  const hold = await billing.hold(payer, 5_000, `req_${i}`);
  await billing.settle(hold, payer, {
    requestId: `req_${i}`,
    model: 'm',
    modelType: 'llm',
    route: 'm#0',
    promptTokens: 20,
    completionTokens: 10,
    costMicrocents: 3_123.25,
    status: 'ok',
    latencyMs: 5,
  });
}

async function run(label: string, total: number, inFlight: number): Promise<void> {
  let next = 0;
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) await metered(next++);
    }),
  );
  await billing.flush();
  const cpu = process.cpuUsage(cpu0);
  const elu = performance.eventLoopUtilization(elu0);
  const ms = performance.now() - t0;
  console.log(
    `${label.padEnd(36)} main thread ${(elu.active / total).toFixed(3)} ms/request, process CPU ${((cpu.user + cpu.system) / total / 1000).toFixed(3)} ms/request, wall ${(ms / total).toFixed(3)} ms/request (${Math.round((total / ms) * 1000)} req/s)`,
  );
}

try {
  await run('warm-up', 2000, 50);
  for (const inFlight of process.env.ONLY ? [Number(process.env.ONLY)] : [1, 10, 50, 200])
    await run(`metered path, ${inFlight} in flight`, inFlight === 1 ? 2000 : 10_000, inFlight);
} finally {
  await billing.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
}
