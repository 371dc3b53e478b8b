// The dashboard rendered in Chromium at scale: the keys page of an account with 100,000 keys and the
// usage page over a year of daily usage, beside an account with 10 keys and a few records, in the
// same run. Each figure is the median over RUNS fresh page loads of the time from navigation start
// to the content on screen (performance.now() in the page when the first key row, or the usage
// totals and the 365-bar chart, is there).
// No pass/fail. KEYS=<n>, RECORDS_PER_DAY=<n>, RUNS=<n> change the sizes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Page } from 'playwright-core';
import { buildDashboard } from '../scripts/build-dashboard.mjs';
import { loadConfig } from '../src/config.ts';
import { createLogger } from '../src/logger.ts';
import { startGateway, type Gateway } from '../src/server.ts';
import { openEmbeddedStore } from '../src/store/embedded/store.ts';
import { BillingService } from '../src/billing/service.ts';
import { noIdentity } from '../src/identity/directory.ts';
import { utcDay } from '../src/billing/money.ts';
import { copyKeys } from '../test/dashboard/seed.ts';

const KEYS = Number(process.env.KEYS ?? 100_000);
const RECORDS_PER_DAY = Number(process.env.RECORDS_PER_DAY ?? 20);
const RUNS = Number(process.env.RUNS ?? 9);
const DAY_MS = 86_400_000;
const PASSWORD = 'correct horse battery';

const dir = await mkdtemp(join(tmpdir(), 'dashboard-browser-bench-'));
const built = await buildDashboard({ outDir: join(dir, 'dashboard') });
const config = loadConfig(
  {},
  {
    port: 0,
    dataDir: join(dir, 'data'),
    dashboardDir: built.outDir,
    logLevel: 'silent',
    auth: { argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 } },
    metrics: { listen: 'off' },
    keys: { maxActivePerUser: 100_000 },
  },
);
const start = () => startGateway(config, { logger: createLogger('silent') });
const post = async (gw: Gateway, path: string, body: unknown, token?: string) => {
  const res = await fetch(gw.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<any>;
};

// 1. Two accounts and one real key each (the template for the rest), through the API.
let gw = await start();
const accounts = { big: 'big@example.com', small: 'small@example.com' };
const ids: Record<string, number> = {};
for (const [name, email] of Object.entries(accounts)) {
  const s = await post(gw, '/portal/auth/signup', { email, password: PASSWORD });
  ids[name] = s.user.id;
  await post(gw, '/portal/keys', { name: 'template' }, s.session_token);
}
await gw.close();

// 2. Copies of the template key and a year of usage, straight into the store.
const t0 = performance.now();
const store = await openEmbeddedStore({ dir: config.dataDir });
const now = Date.now();
let nextId = 10_000;
for (const [name, count] of [
  ['big', KEYS],
  ['small', 10],
] as const)
  nextId = await copyKeys(store, ids[name]!, count, { firstId: nextId, name: 'key', now });
// Usage only: billing reads no people here.
const billing = new BillingService({ store, identity: noIdentity, config: config.billing, events: { emit: async () => {} }, now: () => now });
await billing.init();
const firstDay = now - 364 * DAY_MS;
for (const [name, perDay, days] of [
  ['big', RECORDS_PER_DAY, 365],
  ['small', 1, 10],
] as const) {
  const userId = ids[name]!;
  for (let d = 0; d < days; d++) {
    const records = Array.from({ length: perDay }, (_, k) => {
      const ts = firstDay + d * DAY_MS + k * 1000;
      return {
        _id: billing.usage.newId(ts),
        ts: new Date(ts),
        request_id: `req_${userId}_${d}_${k}`,
        owner: `user:${userId}`,
        owner_type: 'user' as const,
        owner_id: userId,
        user_id: userId,
        key_prefix: `sk-live-${String(k % 7).padStart(12, '0')}`,
        model: `model-${k % 4}`,
        model_type: 'llm',
        route: null,
        prompt_tokens: 120,
        completion_tokens: 40,
        cost_uc: 2500,
        status: 'ok',
        latency_ms: 15,
      };
    });
    await billing.usage.write(billing.usage.batch(records, []));
  }
}
await billing.close();
await store.close();
console.log(`seeded ${KEYS} + 10 keys, ${365 * RECORDS_PER_DAY} + 10 usage records in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

// 3. Each account signed in in its own browser context; fresh loads of each page.
gw = await start();
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'],
});
const pages: Record<string, Page> = {};
for (const [name, email] of Object.entries(accounts)) {
  const page = await (await browser.newContext()).newPage();
  await page.goto(`${gw.url}/dashboard/signin`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API keys', exact: true }).waitFor();
  pages[name] = page;
}

/** Loads `url` and waits for `selector`; the page's own clock says when it was there. */
async function render(page: Page, url: string, selector: string): Promise<number> {
  await page.goto('about:blank');
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForSelector(selector);
  return page.evaluate(() => performance.now());
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const from = utcDay(firstDay);
const to = utcDay(now);
const cases: [string, string, string][] = [
  ['keys page: first page on screen', '/dashboard/keys', 'tbody tr'],
  ['keys page: search for the oldest key', '/dashboard/keys?search=key%200', 'tbody tr'],
  ['usage page: a year by day (365 bars)', `/dashboard/usage?from=${from}&to=${to}&group_by=day`, '[data-testid="usage-totals"]'],
  ['usage page: a year by model', `/dashboard/usage?from=${from}&to=${to}&group_by=model`, '[data-testid="usage-totals"]'],
];
console.log(`${'page'.padEnd(40)} ${`${KEYS} keys`.padStart(12)} ${'10 keys'.padStart(10)} ${'ratio'.padStart(7)}   (median of ${RUNS} loads, ms to content)`);
for (const [label, path, selector] of cases) {
  const out: Record<string, number> = {};
  for (const name of ['big', 'small']) {
    await render(pages[name]!, gw.url + path, selector); // warm
    const runs = [];
    for (let i = 0; i < RUNS; i++) runs.push(await render(pages[name]!, gw.url + path, selector));
    out[name] = median(runs);
  }
  console.log(
    `${label.padEnd(40)} ${out.big!.toFixed(1).padStart(12)} ${out.small!.toFixed(1).padStart(10)} ${(out.big! / out.small!).toFixed(2).padStart(6)}x`,
  );
}
await browser.close();
await gw.close();
await rm(dir, { recursive: true, force: true });
