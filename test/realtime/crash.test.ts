// kill -9 of the gateway in the middle of a realtime session: the socket dies with it; the restarted
// instance (same data dir, same INSTANCE_ID) finds the session's actor orphaned, finalizes it and
// bills the audio its last checkpoint recorded, exactly once (a third start charges nothing more).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gatewayArgs } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { connect, encode, localPrice, skipSpeech, speech16k } from './helpers.ts';

async function launch(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, gatewayArgs(), {
    env: { ...process.env, PORT: '0', METRICS_LISTEN: 'off', DATA_DIR: dataDir, LOG_LEVEL: 'info', ADMIN_TOKEN, INSTANCE_ID: 'rt-crash-node' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('gateway did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`gateway exited early with ${code}`)));
    lines.on('line', (line) => {
      try {
        const rec = JSON.parse(line);
        if (rec.msg === 'gateway started') {
          clearTimeout(timer);
          resolve({ child, url: rec.url });
        }
      } catch {
        /* not JSON */
      }
    });
  });
}

const exited = (child: ChildProcess) => new Promise<void>((r) => child.once('exit', () => r()));

describe('realtime session across kill -9', { skip: skipSpeech }, () => {
  it('the restarted gateway finalizes the orphaned session and bills its checkpointed audio once', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-rt-crash-'));
    const data = join(dir, 'data');
    let gw = await launch(data);
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } })).status, 201);
      const balance = async () => (await call(gw.url, 'GET', '/portal/wallet', { token: u.token })).body.balance_microcents as number;
      const before = await balance();
      const c = await connect(gw.url, { model: 'stt-local', api_key: key });
      const id = (await c.next('transcription_session.created')).session.id;
      const audio = encode(speech16k(1, 1), 'pcm_s16le'); // 4.99 s
      for (let at = 0; at < audio.length; at += 32_000) c.ws.send(audio.subarray(at, at + 32_000));
      await c.next('conversation.item.input_audio_transcription.completed');
      await sleep(2_500); // a progress event and a checkpoint write have passed
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await c.closed;

      gw = await launch(data);
      let view: any;
      const deadline = Date.now() + 15_000;
      do {
        await sleep(100);
        view = (await call(gw.url, 'GET', `/admin/actors/realtime-session/${id}`, { token: ADMIN_TOKEN })).body;
      } while (view.status !== 'done' && Date.now() < deadline);
      assert.equal(view.status, 'done', JSON.stringify(view));
      assert.equal(view.context.ending.reason, 'orphaned');
      assert.ok(view.context.audioMs >= 4000 && view.context.audioMs <= 4990, `checkpointed ${view.context.audioMs} ms`);
      const charged = Math.ceil(view.context.audioMs / 1000);
      assert.equal(view.context.chargedSeconds, charged);
      await sleep(200);
      assert.equal(before - (await balance()), localPrice(charged));

      // Once: a clean restart finds nothing more to charge.
      gw.child.kill('SIGTERM');
      await exited(gw.child);
      gw = await launch(data);
      await sleep(500);
      assert.equal(before - (await balance()), localPrice(charged));
    } finally {
      gw.child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
