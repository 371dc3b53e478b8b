// kill -9 of the gateway in the middle of an inbound call that came through a (fake) Twilio: the
// restarted gateway (same data dir and INSTANCE_ID) finds the call's actor orphaned, hangs the
// caller's leg up through Twilio's REST API (the call it adopted, as a dialled one), ends it
// gateway_restart and bills the number's owner once, never more than Twilio says the call lasted.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { carrierModel, ended, waitForCall } from './helpers.ts';

const NUMBER = '+14155550144';

describe('an inbound call across kill -9', () => {
  it("is finalized by the restarted gateway: the caller's leg hung up by REST, the owner charged once", async () => {
    // The caller stays on the line, silent.
    const twilio = await FakeTwilio.start({ accountSid: 'ACin', authToken: 'in-auth-token', callees: [{ to: '*', answer: 'answer', ring_ms: 0, steps: [] }] });
    const dir = await mkdtemp(join(tmpdir(), 'gw-voice-inbound-crash-'));
    const configFile = join(dir, 'config.json');
    await writeFile(configFile, JSON.stringify({ voice: { simulator: { callees: [] } } }));
    const env = { ADMIN_TOKEN, INSTANCE_ID: 'voice-inbound-crash', CONFIG_FILE: configFile };
    const data = join(dir, 'data');
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } });
      const model = carrierModel({ provider: 'twilio', base_url: twilio.url, account_sid: 'ACin', api_key: 'in-auth-token', from: '+14155550100' });
      assert.equal((await call(gw.url, 'PUT', '/admin/models/voice-twilio', { token: ADMIN_TOKEN, body: model })).status, 201);
      const number = { model: 'voice-twilio', owner: { type: 'user', id: u.id }, first_message: { mode: 'wait_for_callee' } };
      assert.equal((await call(gw.url, 'PUT', `/admin/voice/numbers/${NUMBER}`, { token: ADMIN_TOKEN, body: number })).status, 201);
      const wallet = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body as { balance_microcents: number; held_cents: number };
      const before = (await wallet()).balance_microcents;

      const rang = await twilio.incoming(`${gw.url}/v1/voice/inbound/twilio`, { to: NUMBER, from: '+919800000640' });
      const id = /calls\/(call_[0-9a-f]{24})\/stream/.exec(rang.twiml)?.[1];
      assert.ok(id, rang.twiml);
      assert.equal((await waitForCall(gw, key, id, (c) => c.status === 'in_progress')).status, 'in_progress');
      await sleep(2_500); // heartbeats, and checkpoints of them, have passed
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      const hangups = () => twilio.requests.filter((r) => r.path.endsWith(`/Calls/${rang.sid}.json`) && r.form.get('Status') === 'completed').length;
      assert.equal(hangups(), 0);

      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason, c.direction], ['completed', 'gateway_restart', 'inbound'], JSON.stringify(c));
      assert.equal(hangups(), 1, "the caller's leg is hung up once, by REST");
      assert.equal(typeof c.carrier_duration_seconds, 'number', JSON.stringify(c));
      assert.ok(
        c.billed_seconds >= 1 && c.billed_seconds <= c.carrier_duration_seconds,
        `billed ${c.billed_seconds} s, Twilio says ${c.carrier_duration_seconds} s`,
      );
      await sleep(300);
      const after = await wallet();
      assert.equal(before - after.balance_microcents, c.billed_seconds * 100_000, "the number's owner, at 6 cents a minute");
      assert.equal(after.held_cents, 0, 'nothing left held');
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await twilio.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
