// Voice batches through the API on the simulator: pacing (never over max_concurrent, read from the
// calls' own times), every number's outcome and the batch's counts, cost and events, invalid rows,
// an idempotent creation, another account's batch, pause/resume/cancel and the results CSV.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, type TestGateway } from '../helper.ts';
import { voiceAccount, type VoiceAccount } from './helpers.ts';
import { createBatch, ist, numbers, startBatchGateway, TestClock, waitForBatch } from './batches-helpers.ts';

describe('voice batches', () => {
  let gw: TestGateway;
  let acc: VoiceAccount;
  const clock = new TestClock(ist(12, 0));
  before(async () => {
    gw = await startBatchGateway(clock);
    acc = await voiceAccount(gw, 1000);
  });
  after(() => gw?.destroy());

  it('places every number once, never more than max_concurrent at a time, and completes with its counts, cost and events', async () => {
    const res = await createBatch(gw, acc.key, { name: 'march dues', calls: numbers(7), max_concurrent: 3, metadata: { campaign: 'm1' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers.get('location'), `/v1/voice/batches/${res.body.id}`);
    assert.match(res.body.id, /^batch_[0-9a-f]{24}$/);
    assert.deepEqual(res.body.window, { time_zone: 'Asia/Kolkata', days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '09:00', end: '21:00' });
    assert.equal(res.body.counts.total, 7);
    // The account's calls not ended (what a POST counts), sampled while the batch runs.
    let sampled = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const n = (await call(gw.url, 'GET', '/v1/voice/concurrency', { token: acc.key })).body.in_progress as number;
        sampled = Math.max(sampled, n);
        await new Promise((r) => setTimeout(r, 30));
      }
    })();
    const b = await waitForBatch(gw, acc.key, res.body.id, (x) => x.status === 'completed');
    sampling = false;
    await sampler;
    assert.ok(sampled <= 3 && sampled >= 2, `calls at once: at most 3, saw ${sampled}`);
    assert.equal(b.status, 'completed', JSON.stringify(b));
    assert.equal(b.counts.completed, 7);
    assert.equal(b.calls.data.length, 7);
    // Each number dialled once; the calls' own dial and end times never overlap more than 3 deep.
    const calls = [];
    for (const row of b.calls.data) {
      assert.equal(row.attempts.length, 1);
      assert.equal(row.final_call_id, row.attempts[0].call_id);
      calls.push((await call(gw.url, 'GET', `/v1/voice/calls/${row.final_call_id}`, { token: acc.key })).body);
    }
    assert.equal(new Set(calls.map((c) => c.to)).size, 7);
    // From the calls' own times (whole seconds: a call ending in the second another starts is not counted with it).
    const spans = calls.map((c) => [c.created_at, c.ended_at]);
    let most = 0;
    for (const [s] of spans) most = Math.max(most, spans.filter(([a, e]) => a <= s && s < e).length);
    assert.ok(most <= 3, `at most 3 at once, saw ${most}: ${JSON.stringify(spans)}`);
    const cost = calls.reduce((s, c) => s + Math.round(c.cost_cents * 1e6), 0);
    // The sum of its calls' bills (each shown rounded to the µ¢; the batch sums them exact: what the wallet paid).
    assert.ok(Math.abs(Math.round(b.cost_cents * 1e6) - cost) <= calls.length, `${b.cost_cents} cents, its calls ${cost} µ¢`);
    assert.ok(cost > 0);
    const events = gw.events.filter((e) => e.fields.batch_id === b.id).map((e) => e.event);
    assert.deepEqual(events, ['batch.started', 'batch.completed']);
    const done = gw.events.find((e) => e.event === 'batch.completed' && e.fields.batch_id === b.id)!;
    assert.equal((done.fields.counts as any).completed, 7);
  });

  it('reports invalid numbers per row and places the rest; an entirely invalid list is 400', async () => {
    const calls = [{ to: '+919800001100' }, { to: '12345' }, { to: '+61412345678' }, { to: '+919800001101', variables: { name: 'Asha' } }];
    const res = await createBatch(gw, acc.key, { calls });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(
      res.body.rejected.map((r: any) => [r.index, r.to, r.error.code]),
      [
        [1, '12345', 'invalid_request'],
        [2, '+61412345678', 'destination_not_allowed'],
      ],
    );
    assert.match(res.body.rejected[0].error.message, /calls\[1\]\.to/);
    assert.deepEqual([res.body.counts.total, res.body.counts.invalid, res.body.counts.queued], [4, 2, 2]);
    const b = await waitForBatch(gw, acc.key, res.body.id, (x) => x.status === 'completed');
    assert.deepEqual(
      b.calls.data.map((r: any) => [r.index, r.status, r.attempts.length]),
      [
        [0, 'completed', 1],
        [1, 'invalid', 0],
        [2, 'invalid', 0],
        [3, 'completed', 1],
      ],
    );
    const none = await createBatch(gw, acc.key, { calls: [{ to: 'nope' }, { to: '+1' }] });
    assert.equal(none.status, 400, none.text);
    assert.deepEqual([none.body.error.code, none.body.error.param], ['invalid_request', 'calls[0].to']);
  });

  it('refuses a bad body in the envelope: a window outside legal hours, max_concurrent over the limit, unknown fields, a bad zone', async () => {
    const bad = async (body: Record<string, unknown>, param: string | null, code = 'invalid_request') => {
      const res = await createBatch(gw, acc.key, { calls: numbers(1), ...body });
      assert.equal(res.status, 400, res.text);
      assert.equal(res.body.error.code, code);
      if (param !== null) assert.equal(res.body.error.param, param, res.text);
      return res.body.error.message as string;
    };
    const all = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
    assert.match(await bad({ window: { time_zone: 'Asia/Kolkata', days: all, start: '08:30', end: '20:00' } }, 'window'), /legal calling hours of IN/);
    assert.match(await bad({ window: { time_zone: 'Asia/Kolkata', days: all, start: '10:00', end: '21:30' } }, 'window'), /09:00–21:00/);
    // 06:00–10:00 in London is 10:30–14:30 (or 11:30–15:30) in India: inside; 04:00 there is 08:30 or 09:30 here: outside in winter.
    await bad({ window: { time_zone: 'Europe/London', days: ['mon'], start: '04:00', end: '10:00' } }, 'window');
    await bad({ window: { time_zone: 'Mars/Olympus', days: ['mon'], start: '10:00', end: '11:00' } }, 'window');
    await bad({ window: { time_zone: 'Asia/Kolkata', days: ['mon'], start: '12:00', end: '11:00' } }, 'window');
    await bad({ max_concurrent: 11 }, 'max_concurrent');
    await bad({ retry: { on: ['busy'], max_attempts: 11 } }, null);
    await bad({ retry: { on: ['busy'], min_gap_seconds: 59 } }, null);
    await bad({ colour: 'red' }, null);
    await bad({ max_concurrent: '3' }, null);
    // A window inside the legal hours all year round is taken.
    const ok = await createBatch(gw, acc.key, {
      calls: numbers(1, 40),
      window: { time_zone: 'Europe/London', days: ['sat', 'sun'], start: '06:00', end: '10:00' },
      start_at: Math.floor(clock.now() / 1000) + 86_400,
    });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.status, 'scheduled');
    assert.deepEqual(ok.body.window.days, ['sat', 'sun']);
    await call(gw.url, 'POST', `/v1/voice/batches/${ok.body.id}/cancel`, { token: acc.key });
  });

  it('answers the same batch for the same Idempotency-Key and body; another account sees none of it', async () => {
    const body = { calls: numbers(2, 50), start_at: Math.floor(clock.now() / 1000) + 86_400 };
    const first = await createBatch(gw, acc.key, body, { 'idempotency-key': 'batch-key-1' });
    const again = await createBatch(gw, acc.key, body, { 'idempotency-key': 'batch-key-1' });
    assert.deepEqual([first.status, again.status], [201, 200]);
    assert.equal(again.body.id, first.body.id);
    const other = await createBatch(gw, acc.key, { ...body, name: 'x' }, { 'idempotency-key': 'batch-key-1' });
    assert.deepEqual([other.status, other.body.error?.code], [409, 'idempotency_key_reused']);
    const stranger = await voiceAccount(gw, 100);
    for (const [method, path] of [
      ['GET', `/v1/voice/batches/${first.body.id}`],
      ['POST', `/v1/voice/batches/${first.body.id}/pause`],
      ['POST', `/v1/voice/batches/${first.body.id}/cancel`],
      ['GET', `/v1/voice/batches/${first.body.id}/results`],
      ['GET', '/v1/voice/batches/batch_000000000000000000000000'],
    ] as const) {
      const res = await call(gw.url, method, path, { token: stranger.key });
      assert.deepEqual([res.status, res.body.error?.code], [404, 'not_found'], `${method} ${path}`);
    }
    const list = (await call(gw.url, 'GET', '/v1/voice/batches?limit=100', { token: stranger.key })).body;
    assert.deepEqual(list.data, []);
    const mine = (await call(gw.url, 'GET', '/v1/voice/batches?limit=1', { token: acc.key })).body;
    assert.equal(mine.data[0].id, first.body.id, 'newest first');
    assert.equal(mine.has_more, true);
    const next = (await call(gw.url, 'GET', `/v1/voice/batches?limit=100&after=${mine.last_id}`, { token: acc.key })).body;
    assert.ok(!next.data.some((b: any) => b.id === first.body.id) && next.data.length >= 1);
    const canceled = await call(gw.url, 'POST', `/v1/voice/batches/${first.body.id}/cancel`, { token: acc.key });
    assert.equal(canceled.status, 200, canceled.text);
    const b = await waitForBatch(gw, acc.key, first.body.id, (x) => x.status === 'canceled');
    assert.deepEqual([b.status, b.counts.canceled], ['canceled', 2]);
    const late = await call(gw.url, 'POST', `/v1/voice/batches/${first.body.id}/resume`, { token: acc.key });
    assert.deepEqual([late.status, late.body.error?.code], [409, 'batch_not_active']);
  });

  it('pauses (calls in progress finish, none placed), resumes, and cancels (numbers not dialled canceled, calls in progress finish)', async () => {
    const res = await createBatch(gw, acc.key, { calls: numbers(8, 60), max_concurrent: 2 });
    const id = res.body.id;
    await waitForBatch(gw, acc.key, id, (x) => x.counts.in_progress === 2, 5000);
    const paused = await call(gw.url, 'POST', `/v1/voice/batches/${id}/pause`, { token: acc.key });
    assert.deepEqual([paused.status, paused.body.status, paused.body.paused_reason], [200, 'paused', 'api']);
    const drained = await waitForBatch(gw, acc.key, id, (x) => x.counts.in_progress === 0, 8000);
    assert.equal(drained.counts.completed, 2, 'the two calls in progress finished');
    await new Promise((r) => setTimeout(r, 600));
    const still = await waitForBatch(gw, acc.key, id, () => true);
    assert.deepEqual([still.status, still.counts.queued, still.counts.in_progress], ['paused', 6, 0], 'nothing placed while paused');
    const resumed = await call(gw.url, 'POST', `/v1/voice/batches/${id}/resume`, { token: acc.key });
    assert.deepEqual([resumed.status, resumed.body.status], [200, 'running']);
    await waitForBatch(gw, acc.key, id, (x) => x.counts.in_progress === 2, 5000);
    const cancelling = await call(gw.url, 'POST', `/v1/voice/batches/${id}/cancel`, { token: acc.key });
    assert.deepEqual([cancelling.status, cancelling.body.status], [200, 'cancelling']);
    const b = await waitForBatch(gw, acc.key, id, (x) => x.status === 'canceled', 8000);
    assert.deepEqual([b.status, b.counts.completed, b.counts.canceled, b.counts.in_progress], ['canceled', 4, 4, 0], JSON.stringify(b.counts));
    const events = gw.events.filter((e) => e.fields.batch_id === id).map((e) => [e.event, e.fields.reason ?? e.fields.status ?? null]);
    assert.deepEqual(events, [
      ['batch.started', null],
      ['batch.paused', 'api'],
      ['batch.resumed', null],
      ['batch.completed', 'canceled'],
    ]);
  });

  it('exports the results as RFC 4180 CSV, one line per number, safe against formula injection', async () => {
    const calls = [
      { to: '+919800001200', variables: { name: '=HYPERLINK("http://evil")', note: 'a, "b"' } },
      { to: '+919800000201', variables: { name: 'Ravi' } },
      { to: 'bad' },
    ];
    const res = await createBatch(gw, acc.key, { calls });
    await waitForBatch(gw, acc.key, res.body.id, (x) => x.status === 'completed');
    const csv = await fetch(`${gw.url}/v1/voice/batches/${res.body.id}/results`, { headers: { authorization: `Bearer ${acc.key}` } });
    assert.equal(csv.status, 200);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    const text = await csv.text();
    const lines = text.split('\r\n');
    assert.equal(lines.at(-1), '', 'CRLF after every line');
    assert.equal(lines[0], 'index,to,status,attempts,final_call_id,end_reason,billed_seconds,cost_cents,intent,summary,variables.name,variables.note');
    assert.deepEqual(lines[1]!.split(',').slice(0, 4), ['0', "'+919800001200", 'completed', '1']);
    assert.ok(lines[1]!.endsWith(',"\'=HYPERLINK(""http://evil"")","a, ""b"""'), lines[1]);
    assert.ok(lines[2]!.startsWith("1,'+919800000201,busy,1,call_"), lines[2]);
    assert.ok(lines[2]!.includes(',dial_busy,0,0,'), lines[2]);
    assert.ok(lines[3]!.startsWith('2,bad,invalid,0,,invalid_request,0,0,'), lines[3]);
    assert.equal(lines.length, 5);
  });

  it('has its dashboard twins under /portal with the session, and an estimate that stores nothing', async () => {
    const body = { model: 'voice-local', calls: [...numbers(3, 80), { to: 'bad' }], retry: { on: ['busy'], max_attempts: 2 }, max_duration_seconds: 120 };
    const est = await call(gw.url, 'POST', '/portal/voice/batches/estimate', { token: acc.session, body });
    assert.equal(est.status, 200, est.text);
    // voice-local: 1 cent a minute; typical a minute per valid number, max every attempt to its maximum.
    assert.deepEqual(est.body, { numbers: 4, valid: 3, invalid: 1, attempts_max: 6, cost_cents: { min: 0, typical: 3, max: 12 } });
    const before = (await call(gw.url, 'GET', '/portal/voice/batches?limit=100', { token: acc.session })).body.data.length;
    const made = await call(gw.url, 'POST', '/portal/voice/batches', {
      token: acc.session,
      body: { ...body, start_at: Math.floor(clock.now() / 1000) + 3600 },
    });
    assert.equal(made.status, 201, made.text);
    const list = (await call(gw.url, 'GET', '/portal/voice/batches?limit=100', { token: acc.session })).body.data;
    assert.equal(list.length, before + 1, 'the estimate stored nothing; the creation one batch');
    const viaKey = await call(gw.url, 'GET', `/v1/voice/batches/${made.body.id}`, { token: acc.key });
    assert.deepEqual([viaKey.status, viaKey.body.status, viaKey.body.calls.data.length], [200, 'scheduled', 4], "the account's batch, whichever edge");
    const paused = await call(gw.url, 'POST', `/portal/voice/batches/${made.body.id}/pause`, { token: acc.session });
    assert.deepEqual([paused.status, paused.body.status], [200, 'paused']);
    assert.equal((await call(gw.url, 'POST', `/portal/voice/batches/${made.body.id}/cancel`, { token: acc.session })).status, 200);
    assert.equal((await call(gw.url, 'GET', `/portal/voice/batches/${made.body.id}`, { token: acc.key })).status, 401, 'a key is not a session');
  });
});
