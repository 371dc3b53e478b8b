// Voice batches (issue 43 §1): a batch of `--numbers` (1,000) at `--concurrent` (50) through the
// gateway (separate process, the esbuild bundle as `npm start` runs it, embedded store). The carrier
// is bench/voice-carrier.ts's Twilio in this process, as in bench:voice: it records when each agent
// frame arrives (the simulator's callees live inside the gateway, where the gateway would time
// itself), and each callee is short and scripted: it answers, listens `--seconds` (3) to the agent's
// long first message, and hangs up. In one run:
//   baseline — `--concurrent` calls placed at once straight through POST /v1/voice/call (no batch):
//              p50 / p99 / max gap between consecutive agent frames.
//   batch    — the batch: it completes; every number called exactly once (one attempt: no retry
//              asked), counted at the carrier; the gap between agent frames over every call of the
//              batch, p50 / p99 / max (target p99 ≤ 40 ms, as bench:voice's 100 calls at once); the
//              most calls at once seen at the carrier (≤ --concurrent); the batch's wall time and the
//              gateway's CPU per call.
// Numbers are British mobiles (+44 7400 …) in a window set where it is day now (an Etc/GMT zone),
// so the bench runs at any hour; the legal-hours rule is the tests' to check.
//
//   npm run bench:voice-batch -- [--numbers 1000] [--concurrent 50] [--seconds 3]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchTwilio, FRAME_MS } from './voice-carrier.ts';
import { cpuSeconds, json, payingAccount, ROOT, startGatewayProcess } from './process.ts';

/** The largest of `xs` (a spread of a 1,000-call batch's 150,000 gaps overflows the stack). */
const maxOf = (xs: readonly number[]) => xs.reduce((m, x) => Math.max(m, x), Number.NEGATIVE_INFINITY);
const args = process.argv.slice(2);
const arg = (name: string): string | undefined => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const NUMBERS = Number(arg('--numbers') ?? 1000);
const CONCURRENT = Number(arg('--concurrent') ?? 50);
const SECONDS = Number(arg('--seconds') ?? 3);
const RUN_DIR = mkdtempSync(join(tmpdir(), 'bench-voice-batch-'));
const SID = 'ACbatch';
const TOKEN = 'bench-batch-twilio-token';
const MESSAGE = Array.from({ length: 12 }, () => 'This is a long message from the agent to measure pacing.').join(' ');
const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]! : NaN);
const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');

/** An Etc/GMT zone where it is now between 11:00 and 13:00. */
function daytimeZone(): string {
  const east = Math.max(-12, Math.min(14, 12 - new Date().getUTCHours()));
  return east === 0 ? 'Etc/GMT' : `Etc/GMT${east > 0 ? '-' : '+'}${Math.abs(east)}`;
}

/** The gaps between consecutive agent frames of each call, ms. */
function gapsOf(twilio: BenchTwilio, ids: string[]): number[] {
  const gaps: number[] = [];
  for (const id of ids) {
    const a = twilio.legs.get(id)?.media ?? [];
    for (let i = 1; i < a.length; i++) gaps.push(a[i]! - a[i - 1]!);
  }
  return gaps;
}

/** The most calls whose agent audio overlapped at the carrier (first frame → last frame). */
function mostAtOnce(twilio: BenchTwilio, ids: string[]): number {
  const edges = ids.flatMap((id) => {
    const a = twilio.legs.get(id)?.media ?? [];
    return a.length ? [[a[0]!, 1] as const, [a.at(-1)! + 0.001, -1] as const] : [];
  });
  edges.sort((x, y) => x[0] - y[0]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return most;
}

async function main(): Promise<void> {
  const began = performance.now();
  const twilio = await BenchTwilio.start(SID, TOKEN, { hangupAfterMs: SECONDS * 1000 });
  const defaults = JSON.parse(readFileSync(join(ROOT, 'config', 'default.json'), 'utf8')) as { models: unknown[] };
  const model = {
    id: 'voice-batch-bench',
    type: 'voice',
    owned_by: 'bench',
    stt_model: 'stt-local',
    tts_model: 'tts-local',
    intent_model: 'intent-demo',
    price_per_minute_cents: 1,
    countries: ['GB'],
    languages: ['en-IN'],
    voices: ['en-us'],
    pricing: {},
    routes: [{ provider: 'twilio', base_url: twilio.url, account_sid: SID, api_key: TOKEN, from: '+14155550100' }],
  };
  const config = join(RUN_DIR, 'config.json');
  const voice = { maxConcurrentCalls: CONCURRENT + 10, batches: { pollMs: 200, creditRecheckMs: 30_000, maxSleepMs: 60_000 } };
  writeFileSync(config, JSON.stringify({ voice, models: [...defaults.models, model] }));
  const gw = await startGatewayProcess(RUN_DIR, { env: { CONFIG_FILE: config } });
  try {
    const acc = await payingAccount(gw.url, 1_000_000);
    const template = { model: model.id, max_duration_seconds: 60, first_message: { text: MESSAGE } };
    const to = (i: number) => `+4474001${String(i).padStart(5, '0')}`;
    console.log(`voice batch bench: ${NUMBERS} numbers at max_concurrent ${CONCURRENT}, callees hang up after ${SECONDS} s`);

    // ---- baseline: CONCURRENT calls at once, no batch ----
    const warm = (await json('POST', `${gw.url}/v1/voice/call`, acc.key, { ...template, to: to(99_990) })).id as string; // renders the message once
    await waitEnded(gw.url, acc.key, [warm]);
    const base = await Promise.all(
      Array.from(
        { length: CONCURRENT },
        async (_, i) => (await json('POST', `${gw.url}/v1/voice/call`, acc.key, { ...template, to: to(99_000 + i) })).id as string,
      ),
    );
    await waitEnded(gw.url, acc.key, base);
    const baseGaps = gapsOf(twilio, base);
    twilio.dialled.length = 0;

    // ---- the batch ----
    const window = { time_zone: daytimeZone(), days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '08:00', end: '21:00' };
    const calls = Array.from({ length: NUMBERS }, (_, i) => ({ to: to(i) }));
    const cpu0 = cpuSeconds(gw.child.pid!);
    const t0 = performance.now();
    const created = await json('POST', `${gw.url}/v1/voice/batches`, acc.key, { ...template, calls, window, max_concurrent: CONCURRENT });
    let batch: any = created;
    while (batch.status !== 'completed') {
      await sleep(1000);
      batch = await json('GET', `${gw.url}/v1/voice/batches/${created.id}?limit=1`, acc.key);
      if (performance.now() - t0 > (NUMBERS / CONCURRENT) * (SECONDS + 30) * 1000)
        throw new Error(`the batch did not complete: ${JSON.stringify(batch.counts)}`);
    }
    const wallS = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(gw.child.pid!) - cpu0;
    const ids: string[] = [];
    for (let after: number | null = null; ; ) {
      const page: any = await json('GET', `${gw.url}/v1/voice/batches/${created.id}?limit=1000${after === null ? '' : `&after=${after}`}`, acc.key);
      for (const row of page.calls.data) for (const a of row.attempts) ids.push(a.call_id);
      if (!page.calls.has_more) break;
      after = page.calls.last_id;
    }
    const perNumber = new Map<string, number>();
    for (const n of twilio.dialled) perNumber.set(n, (perNumber.get(n) ?? 0) + 1);
    const once = calls.every((c) => perNumber.get(c.to) === 1) && twilio.dialled.length === NUMBERS;
    const gaps = gapsOf(twilio, ids);
    const audioS = (gaps.length * FRAME_MS) / 1000;
    const most = mostAtOnce(twilio, ids);

    console.log(
      `baseline (same run): ${CONCURRENT} calls at once, no batch: inter-frame gap p50 ${pct(baseGaps, 50).toFixed(1)} ms, p99 ${pct(baseGaps, 99).toFixed(1)} ms, max ${maxOf(baseGaps).toFixed(1)} ms`,
    );
    console.log(
      `batch: ${batch.status} in ${wallS.toFixed(1)} s; counts ${JSON.stringify(batch.counts)}; cost ${batch.cost_cents} cents; ${(NUMBERS / wallS).toFixed(1)} numbers/s`,
    );
    console.log(`  dialled at the carrier: ${twilio.dialled.length} calls to ${perNumber.size} numbers; ${verdict(once)} (every number called exactly once)`);
    console.log(`  most calls at once (agent audio overlapping at the carrier): ${most}; ${verdict(most <= CONCURRENT)} (<= max_concurrent ${CONCURRENT})`);
    console.log(
      `  inter-frame gap over ${ids.length} calls (${audioS.toFixed(0)} s of agent audio): p50 ${pct(gaps, 50).toFixed(1)} ms, p99 ${pct(gaps, 99).toFixed(1)} ms, max ${maxOf(gaps).toFixed(1)} ms`,
    );
    console.log(`  ${verdict(pct(gaps, 99) <= 40)} (p99 gap <= 40 ms throughout)`);
    console.log(`  gateway CPU: ${cpu.toFixed(1)} s over the batch, ${((cpu / NUMBERS) * 1000).toFixed(0)} ms per number`);
    console.log(`(${((performance.now() - began) / 1000).toFixed(0)} s, the gateway's build and start included)`);
  } finally {
    gw.child.kill('SIGTERM');
    twilio.close();
    rmSync(RUN_DIR, { recursive: true, force: true });
  }
}

/** Until every call has ended (each callee hangs up after SECONDS). */
async function waitEnded(url: string, key: string, ids: string[]): Promise<void> {
  const deadline = Date.now() + (SECONDS + 60) * 1000;
  while (Date.now() < deadline) {
    await sleep(500);
    const views = await Promise.all(ids.map((id) => json('GET', `${url}/v1/voice/calls/${id}`, key)));
    if (views.every((c: any) => c.cost_cents !== null && c.status !== 'in_progress')) return;
  }
  throw new Error('the calls did not end in time');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
