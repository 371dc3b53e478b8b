// A recorded call across kill -9 (issue 41 §3): the gateway dies mid-call; what it had appended to the
// call's partial recording (every second) is finalized by the restarted gateway when it finalizes the
// orphaned call: a valid WAV (its header says its real length) up to about the crash, both sides in
// their channels. A recording whose partial file is lost says it has none; never a corrupt file.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { ended, waitForCall } from './helpers.ts';
import { fetchRecording, parseWav, rms } from './recording-checks.ts';

describe('a recorded voice call across kill -9', () => {
  it('keeps the recording up to the crash, finalized as a valid WAV by the restarted gateway', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gw-voice-rec-crash-'));
    const configFile = join(dir, 'config.json');
    // Listens to the greeting, speaks, then stays on the line, silent (the agent's answer plays).
    const callee = { to: '*', answer: 'answer', ring_ms: 100, steps: [{ wait_agent: 'done', ms: 200 }, { say: 'my card was blocked yesterday' }] };
    await writeFile(configFile, JSON.stringify({ voice: { simulator: { callees: [callee] } } }));
    const env = { ADMIN_TOKEN, INSTANCE_ID: 'voice-rec-crash', CONFIG_FILE: configFile };
    const data = join(dir, 'data');
    let gw: Launched = await launch(data, { runCode: true, env });
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 100 } })).status, 201);
      const placed = await call(gw.url, 'POST', '/v1/voice/call', { token: key, body: { model: 'voice-local', to: '+919800000001', record: true } });
      assert.equal(placed.status, 202, placed.text);
      const id = placed.body.id as string;
      const live = await waitForCall(gw, key, id, (x) => x.transcript?.some((t: { role: string }) => t.role === 'callee'), 30_000);
      assert.equal(live.recording.status, 'recording');
      assert.equal((await fetchRecording(gw.url, key, id)).status, 409, 'not served while the call records');
      await sleep(1_500);
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      const lived = (Date.now() - live.answered_at * 1000) / 1000;

      gw = await launch(data, { runCode: true, env });
      const c = await waitForCall(gw, key, id, (x) => ended(x) && x.recording?.status !== 'recording', 20_000);
      assert.deepEqual([c.status, c.end_reason], ['completed', 'gateway_restart'], JSON.stringify(c));
      assert.equal(c.recording.available, true, JSON.stringify(c.recording));
      const got = await fetchRecording(gw.url, key, id);
      assert.equal(got.status, 200);
      const wav = parseWav(got.bytes); // a valid header, its sizes the file's
      assert.equal(wav.channels, 2);
      // Up to the crash, less at most the second not yet appended and the half second not yet settled.
      assert.ok(wav.seconds > lived - 2.5 && wav.seconds <= lived + 0.5, `recorded ${wav.seconds} s of ${lived} s lived`);
      const greeting = c.transcript.find((t: { role: string }) => t.role === 'agent');
      assert.ok(rms(wav.right, greeting.start + 0.2, greeting.end - 0.2) > 300, "the greeting is on the agent's channel");
      const heard = c.transcript.find((t: { role: string }) => t.role === 'callee');
      assert.ok(rms(wav.left, heard.start + 0.2, heard.end - 0.2) > 300, "the callee's words are on the callee's channel");
      const mp3 = await fetchRecording(gw.url, key, id, '?format=mp3');
      assert.equal(mp3.status, 200);
    } finally {
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
