// Key validation cost per /v1 request, measured in one run against baselines:
//   1. in-process: KeyService.authenticate (LRU-warm: one store point read + checks; cold: + HS256
//      verification) against a bare store point read and a bare HMAC-SHA256;
//   2. over HTTP on loopback: GET /v1/models (authenticated) against GET /healthz (no auth), same
//      connection pool, same request count.
// Prints figures and ratios; no pass/fail (timed assertions flake on shared machines).
import { createHmac } from 'node:crypto';
import { Pool } from 'undici';
import { startTestGateway, signup, createKey } from '../test/helper.ts';

function timeIt(label: string, n: number, fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(`${label.padEnd(52)} ${us.toFixed(2).padStart(8)} µs/op`);
  return us;
}

async function timeAsync(label: string, n: number, fn: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(200, n); i++) await fn(); // warm-up
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await fn();
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(`${label.padEnd(52)} ${us.toFixed(2).padStart(8)} µs/op`);
  return us;
}

async function httpRate(
  pool: Pool,
  path: string,
  headers: Record<string, string>,
  total: number,
  concurrency: number,
): Promise<{ rps: number; meanMs: number }> {
  let next = 0;
  let failures = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next++ < total) {
        const res = await pool.request({ method: 'GET', path, headers });
        await res.body.dump();
        if (res.statusCode !== 200) failures++;
      }
    }),
  );
  const ms = performance.now() - t0;
  if (failures) throw new Error(`${failures} requests to ${path} failed`);
  return { rps: (total / ms) * 1000, meanMs: (ms / total) * concurrency };
}

const gw = await startTestGateway({ logLevel: 'silent' });
try {
  const user = await signup(gw.url);
  const key = await createKey(gw.url, user.token, { name: 'bench' });
  const header = `Bearer ${key.api_key}`;

  console.log(`\nKey validation (node ${process.version}, ${gw.store.kind} store)\n`);
  const N = 20_000;
  const secret = 'x'.repeat(48);
  const jwt = key.api_key.slice(8);
  const hmac = timeIt('baseline: HMAC-SHA256 of the JWT', N, () => createHmac('sha256', secret).update(jwt).digest());
  const col = gw.store.collection('api_keys');
  const read = await timeAsync('baseline: store point read (api_keys by jti)', N, () => col.findOne({ _id: key.id }));
  const svc = (await import('../src/identity/keys.ts')).KeyService;
  const { loadConfig } = await import('../src/config.ts');
  const { resolveKeySecret } = await import('../src/shared/secrets.ts');
  const cfg = loadConfig({}, { dataDir: gw.dir });
  const noop = { emit: async () => undefined };
  const warmSvc = new svc(gw.store, resolveKeySecret(cfg), cfg.keys, noop, Date.now);
  const coldSvc = new svc(gw.store, resolveKeySecret(cfg), { ...cfg.keys, verifiedTokenCacheSize: 0 }, noop, Date.now);
  const warm = await timeAsync('authenticate, verified-token LRU warm', N, () => warmSvc.authenticate(header, 'models'));
  const cold = await timeAsync('authenticate, no cache (HS256 verify every time)', N / 4, () => coldSvc.authenticate(header, 'models'));
  console.log(`\n  warm authenticate = ${(warm / read).toFixed(2)}x a bare point read; cold = ${(cold / read).toFixed(2)}x; HMAC alone ${hmac.toFixed(2)} µs`);

  const pool = new Pool(gw.url, { connections: 8, pipelining: 1 });
  const total = 20_000;
  for (const c of [1, 8]) {
    await httpRate(pool, '/healthz', {}, 2000, c);
    const base = await httpRate(pool, '/healthz', {}, total, c);
    await httpRate(pool, '/v1/models', { authorization: header }, 2000, c);
    const auth = await httpRate(pool, '/v1/models', { authorization: header }, total, c);
    console.log(
      `\nHTTP, ${c} connection(s), ${total} requests each:\n` +
        `  GET /healthz (no auth)      ${base.rps.toFixed(0).padStart(7)} req/s   mean ${(base.meanMs * 1000).toFixed(0)} µs\n` +
        `  GET /v1/models (API key)    ${auth.rps.toFixed(0).padStart(7)} req/s   mean ${(auth.meanMs * 1000).toFixed(0)} µs\n` +
        `  key validation adds ${((auth.meanMs - base.meanMs) * 1000).toFixed(0)} µs per request; throughput ratio ${(auth.rps / base.rps).toFixed(2)}`,
    );
  }
  await pool.close();
} finally {
  await gw.destroy();
}
