// kill -9 of the gateway in the middle of a call: the media socket and the simulated callee die with
// it; the restarted instance (same data dir, same INSTANCE_ID) finds the call's actor orphaned, ends
// it with gateway_restart and bills the answered seconds up to its last checkpointed heartbeat,
// exactly once (a third start charges nothing more), and the turns recorded before the kill read back
// once each. A Twilio call is hung up by REST and what Twilio
// says it lasted is compared with what was billed; an Exotel call (no hang-up API) ends with its
// stream, and what Exotel's call details say it lasted is compared likewise.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { readFileSync } from 'node:fs';
import { FakeTwilio } from '../fakes/twilio.ts';
import { FakeExotel } from '../fakes/exotel.ts';
import { carrierModel, ended, place, startVoiceGateway, voiceAccount, waitForCall } from './helpers.ts';

/**
 * A data directory whose config adds one voice model on `route` (stt-local, tts-local, the demo
 * intent pack; 6 cents a minute) to the defaults, and the environment a gateway process needs on it.
 */
async function carrierGateway(prefix: string, modelId: string, route: Record<string, unknown>): Promise<{ dir: string; data: string; env: NodeJS.ProcessEnv }> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const configFile = join(dir, 'config.json');
  const defaults = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as { models: unknown[] };
  const model = { id: modelId, ...carrierModel(route) };
  await writeFile(configFile, JSON.stringify({ models: [...defaults.models, model] }));
  return { dir, data: join(dir, 'data'), env: { ADMIN_TOKEN, INSTANCE_ID: `${modelId}-crash`, CONFIG_FILE: configFile } };
}

describe('a voice call across kill -9', () => {
  it('is finalized by the restarted gateway with gateway_restart and charged once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-voice-crash-'));
    const configFile = join(dir, 'config.json');
    // A callee that answers, presses two keys (turns recorded before the kill) and stays on the line, silent.
    const callee = { to: '*', answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 500 }, { dtmf: '42', gap_ms: 50 }] };
    await writeFile(configFile, JSON.stringify({ voice: { simulator: { callees: [callee] } } }));
    const env = { ADMIN_TOKEN, INSTANCE_ID: 'voice-crash-node', CONFIG_FILE: configFile };
    const data = join(dir, 'data');
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } })).status, 201);
      const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body as { balance_microcents: number; held_cents: number };
      const before = (await balance()).balance_microcents;
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body: { model: 'voice-local', to: '+919800000001' } });
      assert.equal(placed.status, 202, placed.text);
      const id = placed.body.id as string;
      const live = await waitForCall(gw, key, id, (c) => c.status === 'in_progress');
      assert.equal(live.status, 'in_progress');
      await sleep(3_500); // heartbeats, and checkpoints of them, have passed
      gw.child.kill('SIGKILL');
      await exited(gw.child);

      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'gateway_restart'], JSON.stringify(c));
      assert.ok(c.billed_seconds >= 2 && c.billed_seconds <= 5, `billed ${c.billed_seconds} s`);
      assert.equal(c.cost_cents, Math.round((c.billed_seconds / 60) * 1e6) / 1e6, 'voice-local: 1 cent a minute');
      assert.equal(c.carrier_duration_seconds, null, "the simulator's callee died with the process: no carrier to ask");
      // The transcript (voice_turns, out of the actor) survived the kill, each turn once.
      const keys = c.transcript.filter((t: { dtmf?: string }) => t.dtmf).map((t: { dtmf: string }) => t.dtmf);
      assert.deepEqual(keys, ['4', '2'], JSON.stringify(c.transcript));
      assert.deepEqual([c.metrics.turns, c.metrics.turns_dropped], [c.transcript.length, 0]);
      await sleep(300);
      const after = await balance();
      assert.equal(before - after.balance_microcents, Math.ceil((c.billed_seconds * 1e6) / 60));
      assert.equal(after.held_cents, 0, 'the reservation is settled, nothing left held');

      // Once: a clean restart finds nothing more to charge.
      gw.child.kill('SIGTERM');
      await exited(gw.child);
      gw = await launch(data, { runCode: true, env });
      await sleep(500);
      assert.equal((await balance()).balance_microcents, after.balance_microcents);
      assert.equal((await call(gw.url, 'GET', `/v1/voice/calls/${id}`, { token: key })).body.billed_seconds, c.billed_seconds);
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a Twilio call orphaned by kill -9 is hung up by REST when the restarted gateway finalizes it', async () => {
    const twilio = await FakeTwilio.start({
      accountSid: 'ACcrash',
      authToken: 'crash-auth-token',
      callees: [{ to: '*', answer: 'answer', ring_ms: 100, steps: [] }],
    });
    const { dir, data, env } = await carrierGateway('gw-voice-twilio-crash-', 'voice-twilio', {
      provider: 'twilio',
      base_url: twilio.url,
      account_sid: 'ACcrash',
      api_key: 'crash-auth-token',
      from: '+14155550100',
    });
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } });
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body: { model: 'voice-twilio', to: '+919800000001' } });
      assert.equal(placed.status, 202, placed.text);
      await waitForCall(gw, key, placed.body.id, (c) => c.status === 'in_progress');
      await sleep(2_500);
      const killedAt = Date.now();
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      const hangups = () => twilio.requests.filter((r) => /\/Calls\/CA[0-9a-f]+\.json$/.test(r.path) && r.form.get('Status') === 'completed').length;
      assert.equal(hangups(), 0);
      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, placed.body.id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'gateway_restart'], JSON.stringify(c));
      assert.equal(hangups(), 1, 'the call still up at the carrier is hung up once');
      // What Twilio says the call lasted (GET …/Calls/{sid}.json, after the hang-up) against what
      // was billed: never more; short of it by the time the gateway was down (the carrier's call
      // went on until the restarted one hung it up) plus the heartbeat and checkpoint (1 s each).
      const downS = (Date.now() - killedAt) / 1000;
      assert.equal(typeof c.carrier_duration_seconds, 'number', JSON.stringify(c));
      assert.ok(c.billed_seconds <= c.carrier_duration_seconds, `billed ${c.billed_seconds} s, Twilio says ${c.carrier_duration_seconds} s`);
      assert.ok(
        c.carrier_duration_seconds - c.billed_seconds <= Math.ceil(downS) + 3,
        `billed ${c.billed_seconds} s, Twilio says ${c.carrier_duration_seconds} s, down ${downS} s`,
      );
      assert.ok(
        twilio.requests.some((r) => r.method === 'GET' && /\/Calls\/CA[0-9a-f]+\.json$/.test(r.path)),
        'asked by GET',
      );
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await twilio.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('an Exotel call orphaned by kill -9 ended with its stream; the restarted gateway bills it once against what Exotel says it lasted', async () => {
    const callees = [{ to: '*', answer: 'answer', ring_ms: 100, steps: [] }];
    const exotel = await FakeExotel.start({
      accountSid: 'acme1',
      apiKey: 'exo-key',
      apiToken: 'exo-token',
      callees: callees as never,
      speak: () => Promise.reject(new Error('a silent callee')),
    });
    const { dir, data, env } = await carrierGateway('gw-voice-exotel-crash-', 'voice-exotel', {
      provider: 'exotel',
      base_url: exotel.url,
      account_sid: 'acme1',
      api_key: 'exo-key',
      api_token: 'exo-token',
      from: '+918047491899',
    });
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } });
      const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body as { balance_microcents: number; held_cents: number };
      const before = (await balance()).balance_microcents;
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body: { model: 'voice-exotel', to: '+919800000001' } });
      assert.equal(placed.status, 202, placed.text);
      const id = placed.body.id as string;
      await waitForCall(gw, key, id, (c) => c.status === 'in_progress');
      await sleep(2_500);
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      const sid = exotel.sidOf(id)!;
      const atExotel = async () =>
        (await fetch(`${exotel.url}/v1/accounts/acme1/calls/${sid}`, {
          headers: { authorization: `Basic ${Buffer.from('exo-key:exo-token').toString('base64')}` },
        }).then((r) => r.json())) as { call: { status: string; duration: number } };
      for (let i = 0; i < 50 && (await atExotel()).call.status !== 'completed'; i++) await sleep(100);
      assert.equal((await atExotel()).call.status, 'completed', 'the stream died with the gateway, and the call with it at Exotel');

      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, id, ended, 15_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'gateway_restart'], JSON.stringify(c));
      assert.ok(exotel.detailsAsked(id), 'asked Exotel for the call details (it has no hang-up API)');
      // What Exotel says the call lasted (answer to the stream's end, whole seconds) against what was
      // billed (answered seconds to the last checkpointed heartbeat, 1 s apart): never more than a
      // rounding over it, and short of it by at most the heartbeat and checkpoint.
      assert.equal(typeof c.carrier_duration_seconds, 'number', JSON.stringify(c));
      assert.ok(
        c.billed_seconds >= 1 && c.billed_seconds <= c.carrier_duration_seconds + 1,
        `billed ${c.billed_seconds} s, Exotel says ${c.carrier_duration_seconds} s`,
      );
      assert.ok(c.carrier_duration_seconds - c.billed_seconds <= 3, `billed ${c.billed_seconds} s, Exotel says ${c.carrier_duration_seconds} s`);
      await sleep(300);
      const after = await balance();
      assert.equal(before - after.balance_microcents, Math.ceil((c.billed_seconds * 6e6) / 60), 'charged once, at 6 cents a minute');
      assert.equal(after.held_cents, 0);
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await exotel.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a graceful shutdown ends live calls (gateway_restart) and bills them before it stops', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-voice-stop-'));
    const callees = [{ to: '*', answer: 'answer', ring_ms: 100, steps: [] }];
    const gw = await startVoiceGateway(callees, {}, dir);
    const acc = await voiceAccount(gw, 100);
    const placed = await place(gw, acc.key, { to: '+919800000001' });
    await waitForCall(gw, acc.key, placed.body.id, (c) => c.status === 'in_progress');
    await sleep(1_200);
    await gw.close();
    const again = await startVoiceGateway(callees, {}, dir);
    try {
      const c = await waitForCall(again, acc.key, placed.body.id, ended, 5_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'gateway_restart'], JSON.stringify(c));
      assert.ok(c.billed_seconds >= 1 && c.billed_seconds <= 3, String(c.billed_seconds));
      assert.equal((await call(again.url, 'GET', '/portal/wallet', { token: acc.session })).body.held_cents, 0);
    } finally {
      await again.destroy();
    }
  });
});
