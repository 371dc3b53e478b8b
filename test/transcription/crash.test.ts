// Transcription jobs across kill -9: the gateway runs as a child process, jobs are submitted to a
// fake Sarvam job API, the gateway is killed at a different moment of the jobs' lives each round
// (queued, submitting, waiting on the provider, finishing), restarted on the same data directory,
// and then every job completes, each provider job was started once (never a second upload after
// the provider's job id was recorded), and the wallet was charged exactly once per job for its
// decoded seconds.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { wavBytes } from '../fakes/audio.ts';
import { startSarvamUpstream, type SarvamUpstream } from '../fakes/sarvam-upstream.ts';
import { exited, launch, type Launched } from '../gateway-process.ts';
import { multipartForm } from './form.ts';
import { call, createKey, signup } from '../helper.ts';

const ADMIN = 'crash-admin-token-0123456789';
const PRICE = 0.6; // cents a minute

describe('transcription jobs across kill -9', () => {
  let sarvam: SarvamUpstream;
  let dir: string;
  let gw: Launched | null = null;
  const start = async () => (gw = await launch(dir, { runCode: true, env: { ADMIN_TOKEN: ADMIN, TRANSCRIPTION_POLL_MS: '150' } }));

  before(async () => {
    sarvam = await startSarvamUpstream({ apiKey: 'sv-key' });
    sarvam.pollsUntilDone = 4;
    dir = await mkdtemp(join(tmpdir(), 'gw-txcrash-'));
  });
  after(async () => {
    gw?.child.kill('SIGKILL');
    await sarvam?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('every job completes once, is submitted once and charged once, whenever the gateway dies', async () => {
    await start();
    const model = {
      type: 'stt',
      owned_by: 'acme',
      languages: ['hi-IN'],
      jobs: true,
      diarization: true,
      pricing: { cents_per_minute: PRICE },
      routes: [{ provider: 'sarvam', base_url: sarvam.url, api_key: 'sv-key', upstream_model: 'saaras:v3' }],
    };
    assert.equal((await call(gw!.url, 'PUT', '/admin/models/stt-crash', { token: ADMIN, body: model })).status, 201);
    const s = await signup(gw!.url);
    const key = (await createKey(gw!.url, s.token)).api_key;
    await call(gw!.url, 'POST', '/admin/topups', { token: ADMIN, body: { user_id: s.id, amount_cents: 100 } });
    const balance = async () => (await call(gw!.url, 'GET', '/portal/wallet', { token: s.token })).body.balance_microcents as number;
    const initial = await balance();

    const jobs: { id: string; seconds: number }[] = [];
    // Kill moments: just after the 202s (queued or submitting), while waiting on the provider, and
    // around the provider's completion (finishing: result, charge, notify).
    for (const killAfterMs of [5, 250, 650]) {
      for (let i = 0; i < 3; i++) {
        const seconds = 2 + jobs.length * 0.5;
        const created = await call(gw!.url, 'POST', '/v1/audio/transcriptions/jobs', {
          token: key,
          ...multipartForm({ model: 'stt-crash' }, wavBytes(seconds)),
        });
        assert.equal(created.status, 202, created.text);
        jobs.push({ id: created.body.id, seconds });
      }
      await sleep(killAfterMs);
      gw!.child.kill('SIGKILL');
      await exited(gw!.child);
      await start();
    }

    // After the last restart every job finishes.
    const until = Date.now() + 30_000;
    let states: string[] = [];
    do {
      await sleep(200);
      states = await Promise.all(jobs.map(async (j) => (await call(gw!.url, 'GET', `/v1/audio/transcriptions/jobs/${j.id}`, { token: key })).body.status));
    } while (states.some((st) => st !== 'completed' && st !== 'failed') && Date.now() < until);
    assert.deepEqual(
      states,
      jobs.map(() => 'completed'),
    );

    // One started provider job per gateway job, each started once. A second create can only come
    // from a crash between the provider's create and the recorded id, and then it was never started;
    // a second upload only to a job not started yet (nothing processed twice).
    const started = [...sarvam.jobs.values()].filter((j) => j.starts > 0);
    assert.equal(started.length, jobs.length, 'one started provider job per job');
    assert.ok(
      started.every((j) => j.starts === 1),
      'each started once',
    );

    // Charged exactly once per job: ceil(seconds) at the price, to the µ¢.
    await sleep(300);
    const expected = jobs.reduce((sum, j) => sum + Math.ceil(j.seconds - 1e-9) * (PRICE / 60) * 1e6, 0);
    const spent = initial - (await balance());
    assert.ok(Math.abs(spent - expected) < 1, `charged ${spent} µ¢, expected ${expected}`);
  });
});
