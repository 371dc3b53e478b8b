// The set-up of the kill -9 tests of calls through a fake Twilio (transfer-crash.test.ts,
// transfer-asked-crash.test.ts, voicemail-crash.test.ts): a gateway process of the run's code on a
// data dir of its own, the voice model `voice-twilio` (6 cents a minute) routed to the fake Twilio
// whose callees follow `callees`, a key and a wallet of 1 dollar; `restart` launches the process
// again on the same data (as the same instance), `close` kills it and removes everything.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import type { CalleeScript } from '../../src/config.ts';
import { FakeTwilio } from '../fakes/twilio.ts';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { carrierModel, waitForCall } from './helpers.ts';

export interface TwilioCrashRig {
  twilio: FakeTwilio;
  /** The gateway process as launched last. */
  gw: Launched;
  key: string;
  balance(): Promise<{ balance_microcents: number; held_cents: number }>;
  /** Places a call on `voice-twilio` and waits until it is in progress; its id. */
  placed(body: Record<string, unknown>): Promise<string>;
  /** The hang-ups (`Status=…` updates) the fake Twilio received for the call `sid`. */
  hangups(sid: string): number;
  /** Stops the process (`signal`, SIGKILL by default), waits for its end, and starts it again on the same data. */
  restart(signal?: NodeJS.Signals): Promise<void>;
  /** The wallet paid `billedSeconds` at 6 cents a minute since it held `before` µ¢, holds nothing, and a clean restart charges nothing more. */
  chargedOnce(before: number, billedSeconds: number): Promise<void>;
  close(): Promise<void>;
}

export async function twilioCrashRig(name: string, callees: CalleeScript[]): Promise<TwilioCrashRig> {
  const [sid, token] = [`AC${name}`, `${name}-auth-token`];
  const twilio = await FakeTwilio.start({ accountSid: sid, authToken: token, callees });
  const dir = await mkdtemp(join(tmpdir(), `gw-voice-${name}-`));
  const defaults = JSON.parse(readFileSync(new URL('../../config/default.json', import.meta.url), 'utf8')) as { models: unknown[] };
  const route = { provider: 'twilio', base_url: twilio.url, account_sid: sid, api_key: token, from: '+14155550100' };
  await writeFile(join(dir, 'config.json'), JSON.stringify({ models: [...defaults.models, { id: 'voice-twilio', ...carrierModel(route) }] }));
  const env = { ADMIN_TOKEN, INSTANCE_ID: `voice-${name}`, CONFIG_FILE: join(dir, 'config.json') };
  const data = join(dir, 'data');
  const rig: TwilioCrashRig = {
    twilio,
    gw: await launch(data, { runCode: true, env }),
    key: '',
    balance: async () => ({ balance_microcents: 0, held_cents: 0 }),
    async placed(body) {
      const res = await call(rig.gw.url, 'POST', '/v1/voice/call', { token: rig.key, body: { model: 'voice-twilio', ...body } });
      assert.equal(res.status, 202, res.text);
      await waitForCall(rig.gw, rig.key, res.body.id as string, (c) => c.status === 'in_progress');
      return res.body.id as string;
    },
    hangups: (callSid) => twilio.requests.filter((r) => r.path.endsWith(`/Calls/${callSid}.json`) && r.form.get('Status') !== null).length,
    async restart(signal = 'SIGKILL') {
      rig.gw.child.kill(signal);
      await exited(rig.gw.child);
      rig.gw = await launch(data, { runCode: true, env });
    },
    async chargedOnce(before, billedSeconds) {
      await sleep(300);
      const after = await rig.balance();
      assert.equal(before - after.balance_microcents, Math.ceil((billedSeconds * 6e6) / 60), 'charged once, at 6 cents a minute');
      assert.equal(after.held_cents, 0);
      await rig.restart('SIGTERM');
      await sleep(500);
      assert.equal((await rig.balance()).balance_microcents, after.balance_microcents, 'a third start charges nothing more');
    },
    async close() {
      rig.gw.child.kill('SIGKILL');
      await exited(rig.gw.child);
      await twilio.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  try {
    const u = await signup(rig.gw.url);
    rig.key = (await createKey(rig.gw.url, u.token)).api_key;
    await call(rig.gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } });
    rig.balance = async () => (await call(rig.gw.url, 'GET', '/portal/wallet', { token: u.token })).body;
  } catch (err) {
    await rig.close();
    throw err;
  }
  return rig;
}
