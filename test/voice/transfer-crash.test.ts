// kill -9 of the gateway in the middle of a cold transfer (issue 41 §2, test/voice/crash.test.ts
// shows the set-up): the API asked the transfer and the hand-off line is playing when the process
// dies. The restarted gateway restores the call's actor in `transferring`; its `transfer` step was
// never recorded (the carrier was not asked), so the call ends gateway_restart, is hung up at the
// (fake) Twilio like any orphaned call, and is charged once (a clean restart charges nothing more).
// Had the carrier taken the hand-off, the step says so and the call ends transferred, not hung up.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { carrierModel, ended, waitForCall } from './helpers.ts';

describe('a cold transfer across kill -9', () => {
  it('ends with a clear reason and is charged once', async () => {
    const callees = [
      { to: '+919800000041', answer: 'answer' as const, ring_ms: 100, steps: [] },
      { to: '*', answer: 'answer' as const, ring_ms: 100, steps: [] },
    ];
    const twilio = await FakeTwilio.start({ accountSid: 'ACxcrash', authToken: 'xcrash-auth-token', callees });
    const dir = await mkdtemp(join(tmpdir(), 'gw-voice-xfer-crash-'));
    const defaults = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as { models: unknown[] };
    const route = { provider: 'twilio', base_url: twilio.url, account_sid: 'ACxcrash', api_key: 'xcrash-auth-token', from: '+14155550100' };
    await writeFile(join(dir, 'config.json'), JSON.stringify({ models: [...defaults.models, { id: 'voice-twilio', ...carrierModel(route) }] }));
    const env = { ADMIN_TOKEN, INSTANCE_ID: 'voice-xfer-crash', CONFIG_FILE: join(dir, 'config.json') };
    const data = join(dir, 'data');
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } });
      const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body as { balance_microcents: number; held_cents: number };
      const before = (await balance()).balance_microcents;
      const body = { model: 'voice-twilio', to: '+919800000040', first_message: { mode: 'wait_for_callee' } };
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body });
      assert.equal(placed.status, 202, placed.text);
      const id = placed.body.id as string;
      await waitForCall(gw, key, id, (c) => c.status === 'in_progress');
      await sleep(2_000); // heartbeats checkpointed
      const asked = await call(gw.url, 'POST', `/v1/voice/calls/${id}/transfer`, { token: key, body: { to: '+919800000041', mode: 'cold' } });
      assert.equal(asked.status, 202, asked.text);
      await sleep(300); // the hand-off line is being rendered or played
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      const sid = twilio.sidOf(id)!;
      const bridged = twilio.transfers.some((t) => t.sid === sid);

      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, id, ended, 15_000);
      // The clear reason: the carrier took the hand-off (transferred) or not (gateway_restart).
      assert.deepEqual(
        [c.status, c.end_reason, c.transferred_to],
        bridged ? ['completed', 'transferred', '+919800000041'] : ['completed', 'gateway_restart', null],
        JSON.stringify(c),
      );
      assert.equal(bridged, false, 'killed during the hand-off line: the carrier was never asked');
      const hangups = twilio.requests.filter((r) => r.path.endsWith(`/Calls/${sid}.json`) && r.form.get('Status') === 'completed');
      assert.equal(hangups.length, 1, 'the orphaned call is hung up once');
      assert.ok(c.billed_seconds >= 1 && c.billed_seconds <= 5, `billed ${c.billed_seconds} s`);
      await sleep(300);
      const after = await balance();
      assert.equal(before - after.balance_microcents, Math.ceil((c.billed_seconds * 6e6) / 60), 'charged once, at 6 cents a minute');
      assert.equal(after.held_cents, 0);

      gw.child.kill('SIGTERM');
      await exited(gw.child);
      gw = await launch(data, { runCode: true, env });
      await sleep(500);
      assert.equal((await balance()).balance_microcents, after.balance_microcents, 'a third start charges nothing more');
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await twilio.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
