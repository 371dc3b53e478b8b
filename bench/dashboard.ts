// The dashboard's lists at scale, through HTTP on a real gateway (embedded store in a temp dir):
// an account with 100,000 keys and a year of daily usage beside one with 10 keys and a few records.
// Times (median of RUNS calls, ms): the first page of keys, a search that matches only the oldest
// key (the whole list must be searched, not the page: every page of it, following next_after, and
// the longest single request among them), a page deep in the list, and the year's usage
// by day, model and key prefix. The ratio is big/small in the same run. No pass/fail (timed
// assertions flake on shared machines). KEYS=<n> and RECORDS_PER_DAY=<n> change the sizes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startGateway, type Gateway } from '../src/server.ts';
import { openEmbeddedStore } from '../src/store/embedded/store.ts';
import { BillingService } from '../src/billing/service.ts';
import { noIdentity } from '../src/identity/directory.ts';
import type { UsageRecordDoc } from '../src/billing/usage.ts';
import { KEY_PREFIX, type KeyDoc } from '../src/identity/keys.ts';
import { utcDay } from '../src/billing/money.ts';

const KEYS = Number(process.env.KEYS ?? 100_000);
const RECORDS_PER_DAY = Number(process.env.RECORDS_PER_DAY ?? 100);
const RUNS = Number(process.env.RUNS ?? 15);
const DAY_MS = 86_400_000;
const MODELS = ['gpt-small', 'gpt-large', 'whisper', 'tts', 'embed'];

const dir = await mkdtemp(join(tmpdir(), 'dashboard-bench-'));
const config = loadConfig(
  {},
  {
    port: 0,
    dataDir: dir,
    logLevel: 'silent',
    adminToken: 'bench-admin-token-0123456789',
    auth: { argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 } },
    metrics: { listen: 'off' },
    keys: { maxActivePerUser: 100_000 },
  },
);
const start = () => startGateway(config, { logger: createLogger('silent') });

async function call(gw: Gateway, path: string, token: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(gw.url + path, { ...init, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers } });
  const body = await res.json();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

// 1. Two accounts, signed up through the API.
let gw = await start();
const signup = async (email: string) =>
  (
    await fetch(`${gw.url}/portal/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'correct horse battery' }),
    })
  ).json() as Promise<{ user: { id: number }; session_token: string }>;
const big = await signup('big@example.com');
const small = await signup('small@example.com');
await gw.close();

// 2. Their keys and usage, written straight into the store (creating 100,000 keys through the API
// would take minutes of argon2-free but fsync-bound writes and measure nothing of interest here).
const t0 = performance.now();
const store = await openEmbeddedStore({ dir });
const now = Date.now();
const keyDoc = (id: number, userId: number, i: number, total: number): KeyDoc => {
  const jti = id.toString(16).padStart(32, '0');
  const created = new Date(now - (total - i) * 60_000);
  return {
    _id: id,
    jti,
    user_id: userId,
    name: `service ${String(i).padStart(6, '0')}`,
    prefix: KEY_PREFIX + jti.slice(-12),
    scopes: ['*'],
    token_hash: 'x',
    iat: Math.floor(created.getTime() / 1000),
    exp: null,
    expires_at: null,
    created_at: created,
    // Most of a large account's keys are revoked (the active ones are capped): the realistic shape.
    revoked_at: i < total - 90 ? created : null,
    last_used_at: null,
    expired_event_at: null,
    user_rpm: null,
    user_tpd: null,
    user_cpd: null,
    user_cpm: null,
    admin_rpm: null,
    admin_tpd: null,
    admin_cpd: null,
    admin_cpm: null,
  };
};
const apiKeys = store.collection<KeyDoc>('api_keys');
const BATCH = 5000;
for (let i = 0; i < KEYS; i += BATCH) {
  await apiKeys.insertMany(Array.from({ length: Math.min(BATCH, KEYS - i) }, (_, j) => keyDoc(1000 + i + j, big.user.id, i + j, KEYS)));
}
await apiKeys.insertMany(Array.from({ length: 10 }, (_, j) => keyDoc(1000 + KEYS + j, small.user.id, j, 10)));
await store.collection('counters').updateOne({ _id: 'api_keys' }, { $set: { seq: 1000 + KEYS + 10 } }, { upsert: true });

// A year of usage through the usage log's own write path (records, then their rollups).
// Usage only: billing reads no people here.
const billing = new BillingService({ store, identity: noIdentity, config: config.billing, events: { emit: async () => {} }, now: () => now });
await billing.init();
const record = (userId: number, ts: number, n: number): UsageRecordDoc => ({
  _id: billing.usage.newId(ts),
  ts: new Date(ts),
  request_id: `req_${userId}_${n}`,
  owner: `user:${userId}`,
  owner_type: 'user',
  owner_id: userId,
  user_id: userId,
  key_prefix: `${KEY_PREFIX}${(n % 20).toString(16).padStart(12, '0')}`,
  model: MODELS[n % MODELS.length]!,
  model_type: 'llm',
  route: null,
  prompt_tokens: 100,
  completion_tokens: 50,
  cost_uc: 1234,
  status: 'ok',
  latency_ms: 20,
  ...(n % 3 === 0 ? { end_user: `eu${n % 50}` } : {}),
});
const firstDay = now - 364 * DAY_MS;
let written = 0;
for (let d = 0; d < 365; d++) {
  const records = Array.from({ length: RECORDS_PER_DAY }, (_, k) => record(big.user.id, firstDay + d * DAY_MS + k * 1000, d * RECORDS_PER_DAY + k));
  await billing.usage.write(billing.usage.batch(records, []));
  written += records.length;
}
for (let d = 0; d < 10; d++) await billing.usage.write(billing.usage.batch([record(small.user.id, firstDay + d * 36 * DAY_MS, d)], []));
await billing.close();
await store.close();
console.log(`seeded ${KEYS} + 10 keys and ${written} + 10 usage records in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// 3. The calls, each for both accounts.
gw = await start();
const from = utcDay(firstDay);
const to = utcDay(now);

/** The median time of `fn`, or of the number it returns when `reported` (a time it measured itself). */
async function median(fn: () => Promise<unknown>, reported = false): Promise<number> {
  await fn(); // warm
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    const out = await fn();
    times.push(reported ? (out as number) : performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

interface Account {
  token: string;
  keys: number;
  firstId: number;
}
const accounts: Record<'big' | 'small', Account> = {
  big: { token: big.session_token, keys: KEYS, firstId: 1000 },
  small: { token: small.session_token, keys: 10, firstId: 1000 + KEYS },
};

/** Follows next_after until the search has covered every key; returns the requests it took. */
let lastLongest = 0;
async function searchAll(a: Account, term: string): Promise<number> {
  let after = '';
  let found = 0;
  let requests = 0;
  lastLongest = 0;
  for (;;) {
    const t = performance.now();
    const r = await call(gw, `/portal/keys?search=${term}${after ? `&after=${after}` : ''}`, a.token);
    lastLongest = Math.max(lastLongest, performance.now() - t);
    requests++;
    found += r.data.length;
    if (!r.has_more) break;
    after = r.next_after;
  }
  if (found !== 1) throw new Error(`search found ${found}`);
  return requests;
}

const cases: [string, (a: Account) => Promise<unknown>][] = [
  ['first page of keys (20)', (a) => call(gw, '/portal/keys', a.token)],
  ['first page, limit 100', (a) => call(gw, '/portal/keys?limit=100', a.token)],
  ['search: a term only the oldest key has, all pages', (a) => searchAll(a, encodeURIComponent('SERVICE 000000'))],
  ['  the longest of those requests', async (a) => (await searchAll(a, encodeURIComponent('SERVICE 000000')), lastLongest)],
  ['search: a common term (first page)', (a) => call(gw, '/portal/keys?search=service', a.token)],
  ['search: the oldest key by prefix, all pages', (a) => searchAll(a, a.firstId.toString(16).padStart(12, '0'))],
  ['status=active (90 of 100,000)', (a) => call(gw, '/portal/keys?status=active&limit=100', a.token)],
  ['deep page (after the 10th-oldest key)', (a) => call(gw, `/portal/keys?after=${a.firstId + 10}`, a.token)],
  ['usage: the year by day', (a) => call(gw, `/portal/usage?from=${from}&to=${to}&group_by=day`, a.token)],
  ['usage: the year by model', (a) => call(gw, `/portal/usage?from=${from}&to=${to}&group_by=model`, a.token)],
  ['usage: the year by key prefix', (a) => call(gw, `/portal/usage?from=${from}&to=${to}&group_by=key_prefix`, a.token)],
  ['usage: the year by end user', (a) => call(gw, `/portal/usage?from=${from}&to=${to}&group_by=end_user`, a.token)],
  ['usage records: first page', (a) => call(gw, '/portal/usage/records', a.token)],
];

console.log(`${'call'.padEnd(52)} ${`${KEYS} keys`.padStart(12)} ${'10 keys'.padStart(10)} ${'ratio'.padStart(7)}   (median of ${RUNS}, ms)`);
for (const [label, fn] of cases) {
  const reported = label.includes('longest');
  const b = await median(() => fn(accounts.big), reported);
  const s = await median(() => fn(accounts.small), reported);
  console.log(`${label.padEnd(52)} ${b.toFixed(2).padStart(12)} ${s.toFixed(2).padStart(10)} ${(b / s).toFixed(1).padStart(6)}x`);
}
await gw.close();
await rm(dir, { recursive: true, force: true });
