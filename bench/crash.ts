// What a kill -9 under load costs in money, lazy against durable wallet writes: the gateway (the
// bundle, as `npm start` runs it, on a fresh data directory) answers `--concurrency` clients for
// `--ms`, is killed, and is restarted on the same directory; then the answered calls are compared
// with the debits, the usage records and the summary it stored. Prints one line per round (modes
// alternating) and the worst per mode: answered calls left unbilled, and how much traffic that is
// (those calls at the answer rate, in ms). No pass/fail; test/billing/crash.test.ts asserts the bounds.
//
//   npx tsx bench/crash.ts [--rounds 5] [--concurrency 50] [--ms 2000]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBundle, exited, launch } from '../test/gateway-process.ts';
import { startOpenAIUpstream } from '../test/fakes/openai-upstream.ts';
import { crashAccount, fundedAccount, loadUntilGone, putModel, storedUsage } from '../test/billing/crash-helpers.ts';

const args = process.argv.slice(2);
const arg = (name: string, fallback: number): number => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : fallback);
const ROUNDS = arg('--rounds', 5);
const CONCURRENCY = arg('--concurrency', 50);
const LOAD_MS = arg('--ms', 2000);
const ADMIN = 'crash-bench-admin-token-0123456789';

buildBundle();
const up = await startOpenAIUpstream({ apiKey: 'sk-up' });
const dir = mkdtempSync(join(tmpdir(), 'bench-crash-'));
const worst: Record<string, { unbilled: number; windowMs: number; rates: number[] }> = {};
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const durable of round % 2 ? [true, false] : [false, true]) {
      const mode = durable ? 'durable' : 'lazy';
      const data = join(dir, `${mode}-${round}`);
      const config = join(dir, `${mode}.json`);
      writeFileSync(config, JSON.stringify({ billing: { durableWalletWrites: durable } }));
      const env = { ADMIN_TOKEN: ADMIN, CONFIG_FILE: config, LOG_LEVEL: 'warn' };
      const first = await launch(data, { env: { ...env, LOG_LEVEL: 'info' } });
      await putModel(first.url, ADMIN, up.url, 'chat-crash');
      const acct = await fundedAccount(first.url, ADMIN, 1_000_000_000);
      const running = loadUntilGone(first.url, acct.key, 'chat-crash', CONCURRENCY);
      const loadStart = performance.now();
      await new Promise((r) => setTimeout(r, LOAD_MS));
      const gone = exited(first.child);
      first.child.kill('SIGKILL');
      const killedAt = performance.now();
      await gone;
      const { acks } = await running;
      const second = await launch(data, { env: { ...env, LOG_LEVEL: 'info' } });
      try {
        const stored = await storedUsage(second.url, acct.token);
        const debit = 1_000_000_000 * 1_000_000 - stored.wallet.balance_microcents;
        const r = crashAccount(acks, debit);
        const rate = Math.round((acks.length / (killedAt - loadStart)) * 1000);
        const agree = stored.cost === debit && stored.summary.cost_microcents === debit && stored.count === r.debited;
        console.log(
          `${mode.padEnd(7)} round ${round + 1}: ${acks.length} answered (${rate} calls/s), ${r.debited} debited, ` +
            `${r.unbilled} answered but unbilled (${r.windowMs.toFixed(1)} ms of traffic), ${Math.max(0, r.debited - acks.length)} billed but unanswered; ` +
            `records ${agree ? '=' : '≠'} debits`,
        );
        const w = (worst[mode] ??= { unbilled: 0, windowMs: 0, rates: [] });
        w.unbilled = Math.max(w.unbilled, r.unbilled);
        w.windowMs = Math.max(w.windowMs, r.windowMs);
        w.rates.push(rate);
      } finally {
        second.child.kill('SIGKILL');
      }
    }
  }
  for (const [mode, w] of Object.entries(worst)) {
    console.log(
      `${mode}: at most ${w.unbilled} answered calls unbilled, at most ${w.windowMs.toFixed(1)} ms of traffic (${Math.min(...w.rates)}–${Math.max(...w.rates)} calls/s)`,
    );
  }
} finally {
  await up.close();
  rmSync(dir, { recursive: true, force: true });
}
