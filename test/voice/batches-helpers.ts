// Voice batch tests: a gateway on a clock the test moves (so a batch runs inside India's legal
// hours whatever the hour of the run, and a test can cross a window's edge), short simulated callees,
// and polling a batch until it reaches a status.
import { call, startTestGateway, type TestGateway } from '../helper.ts';
import type { CalleeScript } from '../../src/config.ts';

/** A clock that runs with real time from `at` (epoch ms), moved forward by `jump`. */
export class TestClock {
  private offset: number;
  constructor(at: number) {
    this.offset = at - Date.now();
  }
  now = (): number => Date.now() + this.offset;
  /** Moves to `at` (epoch ms). */
  set(at: number): void {
    this.offset = at - Date.now();
  }
}

/** Epoch ms of `hh:mm:ss` in India (UTC+5:30, no DST) on the day of 2026-03-10 plus `days`. */
export const ist = (hh: number, mm: number, ss = 0, days = 0): number => Date.UTC(2026, 2, 10 + days, hh, mm, ss) - 5.5 * 3_600_000;

/** Callees that answer, stay 1.5 s and hang up (any), are busy (+91980000020x) or do not answer (+91980000030x). */
export const BATCH_CALLEES: CalleeScript[] = [
  { to: '+919800000201', answer: 'busy', ring_ms: 50, steps: [] },
  { to: '+919800000202', answer: 'busy', ring_ms: 50, steps: [] },
  { to: '+919800000301', answer: 'no_answer', steps: [] },
  { to: '*', answer: 'answer', ring_ms: 50, steps: [{ silence_ms: 1500 }, { hangup: true }] },
];

/** `batches`: voice.batches settings over the tests' (ticks every 100 ms, a paused batch re-checks the wallet every 300 ms). */
export async function startBatchGateway(clock: TestClock, batches: Record<string, number> = {}): Promise<TestGateway> {
  return startTestGateway(
    {
      voice: {
        maxConcurrentCalls: 10,
        minAffordableSeconds: 10,
        batches: { pollMs: 100, creditRecheckMs: 300, maxSleepMs: 1000, ...batches },
        simulator: { callees: BATCH_CALLEES },
      },
    },
    { now: clock.now },
  );
}

/** `n` valid Indian numbers answered by the `*` callee: +9198000010NN. */
export const numbers = (n: number, from = 0): { to: string }[] =>
  Array.from({ length: n }, (_, i) => ({ to: `+91980000${String(1000 + from + i).padStart(4, '0')}` }));

export const createBatch = (gw: { url: string }, key: string, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  call(gw.url, 'POST', '/v1/voice/batches', { token: key, body: { model: 'voice-local', ...body }, headers });

/** Polls the batch (its first 1000 rows) until `done` says so; the last state otherwise. */
export async function waitForBatch(gw: { url: string }, key: string, id: string, done: (b: any) => boolean, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  while (Date.now() < deadline) {
    last = (await call(gw.url, 'GET', `/v1/voice/batches/${id}?limit=1000`, { token: key })).body;
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  return last;
}
