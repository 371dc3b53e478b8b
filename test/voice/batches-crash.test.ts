// kill -9 of a gateway process in the middle of a batch: the restarted gateway (same data dir, same
// INSTANCE_ID) resumes the batch's actor, adopts what it left (a row marked as dialling whose call
// exists) or places it with the same key (one whose call never came to exist), and finishes: every
// number ends with each attempt dialled exactly once, counted from both processes' "voice call
// placed" lines and from the calls themselves. The calls in progress at the kill end gateway_restart.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { waitForBatch } from './batches-helpers.ts';

/** An Etc/GMT zone where it is now between 11:00 and 13:00, so the test runs inside a daytime window at any hour. */
function daytimeZone(): string {
  const offset = 12 - new Date().getUTCHours(); // hours east of UTC
  const east = Math.max(-12, Math.min(14, offset));
  return east === 0 ? 'Etc/GMT' : `Etc/GMT${east > 0 ? '-' : '+'}${Math.abs(east)}`; // POSIX signs are inverted
}

describe('a voice batch across kill -9', () => {
  it('is resumed by the restarted gateway: every number ends, each attempt dialled exactly once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-batch-crash-'));
    const configFile = join(dir, 'config.json');
    const callee = { to: '*', answer: 'answer', ring_ms: 50, steps: [{ silence_ms: 1200 }, { hangup: true }] };
    const voice = {
      maxConcurrentCalls: 10,
      minAffordableSeconds: 10,
      batches: { pollMs: 100, creditRecheckMs: 300, maxSleepMs: 1000 },
      simulator: { callees: [callee] },
    };
    await writeFile(configFile, JSON.stringify({ voice }));
    const env = { ADMIN_TOKEN, INSTANCE_ID: 'batch-crash-node', CONFIG_FILE: configFile };
    const data = join(dir, 'data');
    let gw: Launched = await launch(data, { runCode: true, env });
    const runs: Launched[] = [gw];
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } })).status, 201);
      // British mobile numbers (voice-local calls GB), in a window where it is day now.
      const calls = Array.from({ length: 16 }, (_, i) => ({ to: `+4474001234${String(10 + i)}` }));
      const window = { time_zone: daytimeZone(), days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start: '08:00', end: '21:00' };
      const res = await call(gw.url, 'POST', '/v1/voice/batches', { token: key, body: { model: 'voice-local', calls, window, max_concurrent: 4 } });
      assert.equal(res.status, 201, res.text);
      const id = res.body.id;
      const mid = await waitForBatch(gw, key, id, (x) => x.counts.completed >= 4 && x.counts.in_progress >= 2, 15_000);
      assert.ok(mid.counts.completed >= 4, JSON.stringify(mid.counts));
      gw.child.kill('SIGKILL');
      await exited(gw.child);

      gw = await launch(data, { runCode: true, env });
      runs.push(gw);
      const b = await waitForBatch(gw, key, id, (x) => x.status === 'completed', 30_000);
      assert.equal(b.status, 'completed', JSON.stringify(b.counts));
      // A call the kill caught before its answer ends failed/gateway_restart (the call's own rule), a
      // final outcome for a batch without retries on `failed`; every other number completed.
      assert.equal(b.counts.completed + b.counts.failed, 16, JSON.stringify(b.counts));
      for (const row of b.calls.data) {
        assert.equal(row.attempts.length, 1, JSON.stringify(row));
        if (row.status === 'failed') assert.equal(row.attempts[0].end_reason, 'gateway_restart', JSON.stringify(row));
      }
      // Dialled exactly once per number: the calls the two processes placed, and the account's calls.
      const placed = runs.flatMap((r) => r.logs.filter((l) => l.msg === 'voice call placed').map((l) => l.call_id as string));
      assert.equal(placed.length, 16, `calls placed by both processes: ${placed.length}`);
      const list = (await call(gw.url, 'GET', '/v1/voice/calls?limit=100', { token: key })).body.data as { id: string; to: string; end_reason: string }[];
      assert.equal(list.length, 16);
      assert.equal(new Set(list.map((c) => c.to)).size, 16, 'each number called once');
      assert.deepEqual(new Set(list.map((c) => c.id)), new Set(b.calls.data.map((r: any) => r.final_call_id)));
      assert.ok(
        list.some((c) => c.end_reason === 'gateway_restart'),
        'the calls in progress at the kill were ended by the restart',
      );
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
