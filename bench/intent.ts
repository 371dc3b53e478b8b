// Throughput of POST /v1/understand with a valid key over loopback HTTP, against GET /v1/models
// (the same auth, no classification, no billing) on the same pool: the first figure is the whole
// metered path (limits, hold, cascade, session actor write, settle), the ratio what it costs on top.
// Turns rotate over English, Hindi and Hinglish, one session per concurrent client.
// Prints figures; no pass/fail (timed assertions flake on shared machines).
import { Pool } from 'undici';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway } from '../test/helper.ts';

const TURNS = [
  'The ATM did not dispense cash but Rs. 5,000 was debited',
  'paise nahi nikle par account se kat gaye',
  'एटीएम से पैसे नहीं निकले',
  'net nahi chal raha',
  'haan ji',
  'call baar baar kat rahi hai',
];

async function rate(
  pool: Pool,
  req: (i: number, c: number) => { method: 'GET' | 'POST'; path: string; body?: string },
  headers: Record<string, string>,
  total: number,
  concurrency: number,
) {
  let next = 0;
  let failures = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, c) => {
      while (next < total) {
        const i = next++;
        const r = req(i, c);
        const res = await pool.request({ ...r, headers });
        await res.body.dump();
        if (res.statusCode !== 200) failures++;
      }
    }),
  );
  const ms = performance.now() - t0;
  if (failures) throw new Error(`${failures} requests failed`);
  return { rps: (total / ms) * 1000, meanMs: (ms / total) * concurrency };
}

const gw = await startTestGateway({ logLevel: 'silent' });
try {
  const user = await signup(gw.url);
  await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: user.id, amount_cents: 1_000_000 } });
  const key = await createKey(gw.url, user.token, { name: 'bench' });
  const headers = { authorization: `Bearer ${key.api_key}`, 'content-type': 'application/json' };
  const pool = new Pool(gw.url, { connections: 64 });
  const understand = (i: number, c: number) => ({
    method: 'POST' as const,
    path: '/v1/understand',
    body: JSON.stringify({ model: 'intent-demo', session_id: `bench-${c}`, text: TURNS[i % TURNS.length] }),
  });
  const models = () => ({ method: 'GET' as const, path: '/v1/models' });
  await rate(pool, understand, headers, 500, 16); // warm-up: trains the pack, loads the sessions
  console.log(`\nPOST /v1/understand over loopback (node ${process.version}, ${gw.store.kind} store)\n`);
  for (const concurrency of [1, 16, 64]) {
    const n = concurrency === 1 ? 1000 : 5000;
    const u = await rate(pool, understand, headers, n, concurrency);
    const m = await rate(pool, models, headers, n, concurrency);
    console.log(
      `concurrency ${String(concurrency).padStart(2)}: understand ${u.rps.toFixed(0).padStart(6)} req/s (mean ${u.meanMs.toFixed(2)} ms)   /v1/models ${m.rps.toFixed(0).padStart(6)} req/s   ratio ${(m.rps / u.rps).toFixed(2)}x`,
    );
  }
  await pool.close();
} finally {
  await gw.destroy();
}
