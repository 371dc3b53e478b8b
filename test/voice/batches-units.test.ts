// The batch's pieces on their own: windows and legal hours (time zones, DST, the next opening), the
// machine's `decide` (pure), and the tick against the real store with a calls port that keeps
// POST /v1/voice/call's idempotency (a key answers the call it made): a row marked as dialling is
// adopted, or placed anew with the same key, never twice; 402 and 429 put the row back without an
// attempt; another refusal is a failed attempt, retried by the policy.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Store } from '../../src/store/port.ts';
import { ApiError } from '../../src/errors.ts';
import { BatchRows, rowId, type RowDoc } from '../../src/voice/batches/rows.ts';
import { tick, type BatchCallsPort, type BatchSpecFields, type CallEnd } from '../../src/voice/batches/pacing.ts';
import { inWindow, nextOpening, settleWindow, type BatchWindow } from '../../src/voice/batches/window.ts';
import { decide, type TickOutput, type VoiceBatchContext } from '../../machines/voice-batch.machine.ts';
import { ist } from './batches-helpers.ts';

const ALL = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
const INDIA: BatchWindow = { time_zone: 'Asia/Kolkata', days: [...ALL], start: '09:00', end: '21:00' };

describe('batch windows', () => {
  it('opens and closes on the minute in the window’s zone, and names the next opening', () => {
    assert.equal(inWindow(INDIA, ist(20, 59, 59)), true);
    assert.equal(inWindow(INDIA, ist(21, 0)), false);
    assert.equal(inWindow(INDIA, ist(8, 59, 59)), false);
    assert.equal(nextOpening(INDIA, ist(21, 0)), ist(9, 0, 0, 1));
    assert.equal(nextOpening(INDIA, ist(12, 0)), ist(12, 0));
    // 2026-03-10 is a Tuesday: a Monday-only window opens next Monday.
    assert.equal(nextOpening({ ...INDIA, days: ['mon'] }, ist(12, 0)), ist(9, 0, 0, 6));
  });

  it('follows daylight saving (New York: 09:00 local is 13:00 UTC in summer, 14:00 in winter)', () => {
    const ny: BatchWindow = { time_zone: 'America/New_York', days: [...ALL], start: '09:00', end: '17:00' };
    assert.equal(nextOpening(ny, Date.UTC(2026, 6, 1, 4)), Date.UTC(2026, 6, 1, 13));
    assert.equal(nextOpening(ny, Date.UTC(2026, 0, 15, 4)), Date.UTC(2026, 0, 15, 14));
    // The day DST starts (2026-03-08): 09:00 EDT.
    assert.equal(nextOpening(ny, Date.UTC(2026, 2, 8, 5)), Date.UTC(2026, 2, 8, 13));
  });

  it('defaults to India’s legal hours and refuses any part of a window outside them, over the year', () => {
    assert.deepEqual(settleWindow(undefined, ['IN'], ist(12, 0)), INDIA);
    assert.throws(() => settleWindow(undefined, ['IN', 'US'], ist(12, 0)), /must be given/);
    assert.throws(() => settleWindow({ ...INDIA, start: '08:59' }, ['IN'], ist(12, 0)), /legal calling hours of IN/);
    // London 05:00 is 09:30 in India in winter, 10:30 in summer: taken; 04:00 is 08:30 in winter: refused.
    const london = { time_zone: 'Europe/London', days: [...ALL], start: '05:00', end: '15:00' };
    assert.doesNotThrow(() => settleWindow(london, ['IN'], ist(12, 0)));
    assert.throws(() => settleWindow({ ...london, start: '04:00' }, ['IN'], ist(12, 0)), /IN/);
    // Other countries: 08:00–21:00 in the window's zone.
    assert.doesNotThrow(() => settleWindow({ time_zone: 'America/Chicago', days: ['mon'], start: '08:00', end: '21:00' }, ['US'], ist(12, 0)));
    assert.throws(() => settleWindow({ time_zone: 'America/Chicago', days: ['mon'], start: '07:59', end: '12:00' }, ['US'], ist(12, 0)), /US/);
  });
});

describe('the batch machine’s decision', () => {
  const ctx = (over: Partial<VoiceBatchContext> = {}) =>
    ({ status: 'running', pausedReason: null, timing: { pollMs: 1000, creditRecheckMs: 30_000, maxSleepMs: 60_000 }, ...over }) as VoiceBatchContext;
  const out = (over: Partial<TickOutput> & { queued?: number; in_progress?: number } = {}): TickOutput => {
    const { queued = 1, in_progress = 0, ...rest } = over;
    const counts = { total: 1, queued, in_progress, completed: 0, busy: 0, no_answer: 0, failed: 0, voicemail: 0, canceled: 0, invalid: 0 };
    return { at: 1_000_000, counts, costMicrocents: 0, inWindow: true, nextWindowAt: 1_000_000, nextDueAt: 1_000_000, refused: null, ...rest };
  };
  it('completes, cancels, pauses for credit, waits for the window and paces by the due rows', () => {
    assert.equal(decide(ctx(), out({ queued: 0 })).status, 'completed');
    assert.equal(decide(ctx({ status: 'cancelling' }), out({ queued: 0 })).status, 'canceled');
    assert.equal(decide(ctx({ status: 'cancelling' }), out({ in_progress: 1 })).status, 'cancelling');
    assert.deepEqual(decide(ctx(), out({ refused: 'insufficient_credit' })), {
      status: 'paused',
      pausedReason: 'insufficient_credit',
      nextWindowAt: null,
      wakeAt: 1_030_000,
    });
    assert.deepEqual(decide(ctx(), out({ inWindow: false, nextWindowAt: 5_000_000 })), {
      status: 'waiting_window',
      pausedReason: null,
      nextWindowAt: 5_000_000,
      wakeAt: 5_000_000,
    });
    assert.equal(decide(ctx(), out({ inWindow: false, nextWindowAt: 5_000_000, in_progress: 1 })).wakeAt, 1_001_000, 'calls in progress are still watched');
    assert.equal(decide(ctx(), out({ nextDueAt: 1_600_000 })).wakeAt, 1_600_000, 'a retry’s gap');
    assert.equal(decide(ctx({ status: 'paused', pausedReason: 'api' }), out()).wakeAt, null, 'paused by the API: asleep until told');
  });
});

describe('a batch tick', () => {
  let dir: string;
  let store: Store;
  let rows: BatchRows;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'batch-units-'));
    store = await openEmbeddedStore({ dir });
    rows = new BatchRows(store);
    await rows.init();
  });
  after(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Calls with POST /v1/voice/call's idempotency: a key answers the call it made; `dialled` counts real placements. */
  class Calls implements BatchCallsPort {
    byKey = new Map<string, string | null>(); // null: a key recorded whose call never came to exist
    dialled: string[] = [];
    ends = new Map<string, CallEnd>();
    refuse: ApiError | null = null;
    async place(_p: unknown, body: { to: string }, key: string): Promise<string> {
      if (this.refuse) throw this.refuse;
      const made = this.byKey.get(key);
      if (made) return made;
      if (made === null) throw new ApiError('conflict', 'still placing');
      const id = `call_${this.dialled.length}_${body.to}`;
      this.dialled.push(id);
      this.byKey.set(key, id);
      return id;
    }
    async forgetKey(_p: unknown, key: string) {
      this.byKey.delete(key);
    }
    async ended(id: string) {
      return this.ends.get(id) ?? null;
    }
    async affordable() {
      return this.refuse?.code !== 'insufficient_credit';
    }
    end(id: string, status: string) {
      this.ends.set(id, {
        status,
        end_reason: status === 'busy' ? 'dial_busy' : 'callee_hangup',
        started_at: 1,
        ended_at: NOW,
        billed_seconds: 3,
        cost_microcents: 50_000,
      });
    }
  }

  const NOW = ist(12, 0);
  const spec = {
    window: INDIA,
    maxConcurrent: 2,
    retry: { on: ['busy'], max_attempts: 2, min_gap_seconds: 60 },
    template: { model: 'm' },
  } as unknown as BatchSpecFields;
  let n = 0;
  async function batch(count: number): Promise<string> {
    const id = `batch_${String(++n).padStart(24, '0')}`;
    const docs: RowDoc[] = Array.from({ length: count }, (_, index) => ({
      ...{ _id: rowId(id, index), batch_id: id, account: 'user:1', index, to: `+9198000010${String(index).padStart(2, '0')}` },
      ...{
        variables: {},
        metadata: {},
        status: 'queued' as const,
        attempts: [],
        current: null,
        next_attempt_at: 0,
        final_call_id: null,
        cost_microcents: 0,
        error: null,
      },
    }));
    await rows.insert(docs);
    return id;
  }
  const run = (calls: Calls, batchId: string, now = NOW, mode: 'place' | 'probe' | 'drain' | 'cancel' = 'place') =>
    tick({ rows, calls, now: () => now, logger: pino({ level: 'silent' }) }, { batchId, account: 'user:1', mode, spec });

  it('never has more than max_concurrent in progress, and records ends, retries and final outcomes', async () => {
    const calls = new Calls();
    const id = await batch(3);
    let t = await run(calls, id);
    assert.deepEqual([t.counts.in_progress, t.counts.queued, calls.dialled.length], [2, 1, 2]);
    t = await run(calls, id);
    assert.equal(calls.dialled.length, 2, 'no room: nothing more placed');
    calls.end(calls.dialled[0]!, 'completed');
    calls.end(calls.dialled[1]!, 'busy');
    t = await run(calls, id);
    assert.deepEqual([t.counts.completed, t.counts.in_progress, t.counts.queued, calls.dialled.length], [1, 1, 1, 3]);
    assert.equal(t.nextDueAt, NOW + 60_000, 'the busy row waits its gap');
    calls.end(calls.dialled[2]!, 'completed');
    t = await run(calls, id, NOW + 60_000);
    assert.equal(calls.dialled.length, 4, 'the busy row dialled again after its gap');
    calls.end(calls.dialled[3]!, 'busy');
    t = await run(calls, id, NOW + 61_000);
    assert.deepEqual([t.counts.completed, t.counts.busy, t.counts.queued, t.counts.in_progress], [2, 1, 0, 0]);
    const [busy] = await rows.page(id, { status: 'busy', limit: 10 });
    assert.deepEqual(
      busy!.attempts.map((a) => a.call_id),
      [calls.dialled[1], calls.dialled[3]],
    );
    assert.equal(t.costMicrocents, 4 * 50_000);
  });

  it('adopts the call a marked row made, and places the one it never made with the same key: never twice', async () => {
    const calls = new Calls();
    const id = await batch(2);
    // A run that died after marking both rows: the first's call was made, the second's key was recorded but no call exists.
    const [a, b] = await rows.page(id, { limit: 10 });
    await rows.update(a!, { status: 'in_progress', current: { attempt: 1, key: `${id}:0:1`, call_id: null } }, 'queued');
    await rows.update(b!, { status: 'in_progress', current: { attempt: 1, key: `${id}:1:1`, call_id: null } }, 'queued');
    calls.byKey.set(`${id}:0:1`, 'call_made_before');
    calls.byKey.set(`${id}:1:1`, null);
    const t = await run(calls, id);
    assert.equal(t.counts.in_progress, 2);
    assert.deepEqual(calls.dialled, [`call_0_${b!.to}`], 'only the call that never existed is placed, with its own key');
    const [ra, rb] = await rows.page(id, { limit: 10 });
    assert.deepEqual([ra!.current?.call_id, rb!.current?.call_id, rb!.current?.key], ['call_made_before', `call_0_${b!.to}`, `${id}:1:1`]);
    await run(calls, id);
    assert.equal(calls.dialled.length, 1, 'a second tick places nothing again');
  });

  it('puts the row back on 402 and 429 without an attempt; records another refusal as a failed attempt', async () => {
    const calls = new Calls();
    const id = await batch(1);
    calls.refuse = new ApiError('insufficient_credit', 'poor');
    let t = await run(calls, id);
    assert.deepEqual([t.refused, t.counts.queued], ['insufficient_credit', 1]);
    t = await run(calls, id, NOW, 'probe');
    assert.deepEqual([t.refused, t.counts.queued], ['insufficient_credit', 1], 'the probe checks the wallet before placing');
    calls.refuse = new ApiError('concurrency_limit_exceeded', 'busy account');
    t = await run(calls, id);
    assert.deepEqual([t.refused, t.counts.queued], ['concurrency', 1]);
    const [row] = await rows.page(id, { limit: 1 });
    assert.deepEqual(row!.attempts, []);
    calls.refuse = new ApiError('model_not_found', 'gone');
    t = await run(calls, id);
    assert.deepEqual([t.refused, t.counts.failed], [null, 1]);
    const [failed] = await rows.page(id, { limit: 1 });
    assert.deepEqual([failed!.attempts.length, failed!.attempts[0]!.end_reason], [1, 'model_not_found']);
  });

  it('cancels the rows not dialled; outside the window places nothing', async () => {
    const calls = new Calls();
    const id = await batch(3);
    let t = await run(calls, id, ist(21, 0));
    assert.deepEqual([t.inWindow, t.nextWindowAt, calls.dialled.length], [false, ist(9, 0, 0, 1), 0]);
    await run(calls, id);
    t = await run(calls, id, NOW, 'cancel');
    assert.deepEqual([t.counts.canceled, t.counts.in_progress], [1, 2]);
  });
});
