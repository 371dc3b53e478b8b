// kill -9 of the gateway while its speech engines run: every child process it had (pocketsphinx
// for realtime sessions and sync transcriptions, ffmpeg decoding, espeak-ng speaking) dies with
// it, and the customer audio those engines were working on is in the gateway's own area
// (DATA_DIR/tmp), which the restarted gateway sweeps before it serves.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { wavOf } from '../../src/speech/wav.ts';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { childrenOf, running, type Proc } from '../proc.ts';
import { connect, encode, skipSpeech, speech16k, type Client } from '../realtime/helpers.ts';
import { multipartForm } from '../transcription/form.ts';

/** Where a pocketsphinx engine keeps its audio (`-cepdir <dir>`). */
function audioDirOf(p: Proc): string | undefined {
  const at = p.args.indexOf('-cepdir');
  return at < 0 ? undefined : p.args[at + 1];
}

const tool = (p: Proc): string => basename(p.args[0] ?? '?');

const skip =
  process.platform !== 'linux'
    ? 'reads /proc'
    : skipSpeech || (spawnSync('espeak-ng', ['--version']).error ? 'needs espeak-ng (scripts/install-debian-packages.sh)' : false);

describe('speech engines across kill -9 of the gateway', { skip }, () => {
  it('every child dies with the gateway, and the restart sweeps the audio it left', async (t) => {
    const root = await mkdtemp(join(tmpdir(), 'gw-children-'));
    const data = join(root, 'data');
    let gw: Launched = await launch(data, { runCode: true, env: { ADMIN_TOKEN } });
    const clients: Client[] = [];
    let captured: Proc[] = [];
    try {
      const u = await signup(gw.url);
      const key = (await createKey(gw.url, u.token)).api_key;
      assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: u.id, amount_cents: 1000 } })).status, 201);

      // Load: three realtime sessions (a resident engine each, fed the customer's audio), two sync
      // transcriptions of 25 s (ffmpeg, then an engine decoding), one long speech whose reader
      // never reads (espeak-ng blocked on its output).
      const speech = speech16k(1, 1);
      for (let i = 0; i < 3; i++) {
        const c = await connect(gw.url, { model: 'stt-local', api_key: key });
        clients.push(c);
        await c.next('transcription_session.created');
        c.ws.send(encode(speech, 'pcm_s16le'));
      }
      const long = new Int16Array(speech.length * 5);
      for (let i = 0; i < 5; i++) long.set(speech, i * speech.length);
      const wav = wavOf(long, 16000);
      const requests: Promise<unknown>[] = [];
      for (let i = 0; i < 2; i++) {
        requests.push(call(gw.url, 'POST', '/v1/audio/transcriptions', { token: key, ...multipartForm({ model: 'stt-local' }, wav) }).catch(() => null));
      }
      const unread = fetch(`${gw.url}/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tts-local', voice: 'en-us', input: 'The quick brown fox jumps over the lazy dog. '.repeat(90), response_format: 'pcm' }),
      }).catch(() => null);
      requests.push(unread);

      // Wait until the five engines and espeak-ng are running.
      const deadline = Date.now() + 15_000;
      for (;;) {
        captured = childrenOf(gw.child.pid!);
        const engines = captured.filter((p) => tool(p) === 'pocketsphinx_batch').length;
        if (engines >= 5 && captured.some((p) => tool(p) === 'espeak-ng')) break;
        if (Date.now() > deadline) assert.fail(`the load did not start its engines: ${captured.map(tool).join(', ')}`);
        await sleep(50);
      }
      const audioDirs = captured.map(audioDirOf).filter((d): d is string => d !== undefined);
      for (const d of audioDirs) assert.ok(existsSync(join(d, 'audio.raw')), `${d} holds the engine's audio`);

      const killedAt = Date.now();
      gw.child.kill('SIGKILL');
      await exited(gw.child);
      while (captured.some(running) && Date.now() - killedAt < 2_000) await sleep(20);
      const survivors = captured.filter(running).map((p) => `${p.pid} ${tool(p)}`);
      assert.deepEqual(survivors, [], `children alive ${Date.now() - killedAt} ms after the gateway was killed`);
      t.diagnostic(`${captured.length} children (${captured.map(tool).join(', ')}) gone ${Date.now() - killedAt} ms after the kill`);
      await Promise.all(requests);
      for (const c of clients) await c.closed;

      // The audio was in the gateway's own area, never in the system's temp dir...
      const area = join(data, 'tmp');
      for (const d of audioDirs) assert.ok(d.startsWith(area + '/'), `${d} is under ${area}`);
      assert.equal(statSync(area).mode & 0o777, 0o700);
      // ...and the restart sweeps it before serving: what is left is the new gateway's own folder, empty.
      gw = await launch(data, { runCode: true, env: { ADMIN_TOKEN } });
      for (const d of audioDirs) assert.equal(existsSync(d), false, `${d} was swept`);
      const left = readdirSync(area);
      assert.equal(left.length, 1, left.join(', '));
      assert.match(left[0]!, new RegExp(`^${gw.child.pid}-`));
      assert.deepEqual(readdirSync(join(area, left[0]!)), []);
      assert.equal(statSync(join(area, left[0]!)).mode & 0o777, 0o700);
    } finally {
      for (const c of clients) c.ws.terminate();
      gw.child.kill('SIGKILL');
      // What a failing run left: the engines it started and their audio.
      for (const p of captured.filter(running)) process.kill(p.pid, 'SIGKILL');
      for (const d of captured.map(audioDirOf)) if (d && /\/pocketsphinx-\w+$/.test(d)) await rm(d, { recursive: true, force: true });
      await rm(root, { recursive: true, force: true });
    }
  });
});
