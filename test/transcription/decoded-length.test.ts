// A job is billed for what its recording decodes to, never for what its container claims, and takes
// no recording longer than `transcription.maxAudioMinutes` (on d9a440b a FLAC whose header said
// 1 s but held 10 h was held 3 s, decoded whole, completed with `duration: 36000` and charged the
// 3 s hold). Through a real gateway on the offline engine, with FLAC files whose STREAMINFO lies.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { haveFfmpeg } from '../../scripts/diarization/sources.ts';
import { wavBytes } from '../fakes/audio.ts';
import { storedUsage } from '../billing/crash-helpers.ts';
import { multipartForm } from './form.ts';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';

const skip = haveFfmpeg() ? false : 'needs ffmpeg (scripts/install-debian-packages.sh)';

/** `seconds` of 16 kHz silence as FLAC whose STREAMINFO claims `claimed` seconds. */
function lyingFlac(seconds: number, claimed: number): Buffer {
  const out = spawnSync(
    'ffmpeg',
    ['-v', 'error', '-f', 'lavfi', '-i', `anullsrc=r=16000:cl=mono`, '-t', String(seconds), '-c:a', 'flac', '-f', 'flac', 'pipe:1'],
    { maxBuffer: 64 << 20 },
  );
  assert.equal(out.status, 0, String(out.stderr));
  const flac = Buffer.from(out.stdout);
  assert.equal(flac.subarray(0, 4).toString('latin1'), 'fLaC');
  // STREAMINFO starts at byte 8; its total-samples field is the low 36 bits of the 8 bytes at 18.
  const field = flac.readBigUInt64BE(18);
  flac.writeBigUInt64BE((field & ~0xfffffffffn) | BigInt(claimed * 16_000), 18);
  flac.fill(0, 26, 42); // its MD5: unknown
  return flac;
}

describe('jobs are billed by decoded length and bounded in length', { skip }, () => {
  let gw: TestGateway;

  before(async () => {
    // Two minutes at most per job; a dear model so the bill is read in whole cents.
    gw = await startTestGateway({ transcription: { maxAudioMinutes: 2, pollMs: 100 } });
    const put = await call(gw.url, 'PUT', '/admin/models/stt-dear', {
      token: ADMIN_TOKEN,
      body: {
        type: 'stt',
        owned_by: 'acme',
        languages: ['en-US'],
        modes: ['transcribe'],
        jobs: true,
        diarization: true,
        pricing: { cents_per_minute: 60 },
        routes: [{ provider: 'local', upstream_model: 'pocketsphinx-en-us' }],
      },
    });
    assert.ok(put.status < 300, put.text);
  });
  after(async () => gw?.destroy());

  async function account(cents: number) {
    const s = await signup(gw.url);
    const key = (await createKey(gw.url, s.token)).api_key;
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: cents } });
    return { token: s.token, key, id: s.id as number };
  }

  async function runJob(key: string, file: Buffer) {
    const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', { token: key, ...multipartForm({ model: 'stt-dear' }, file) });
    assert.equal(created.status, 202, created.text);
    let job: any;
    const until = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 150));
      job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${created.body.id}`, { token: key })).body;
    } while ((job.status === 'queued' || job.status === 'processing') && Date.now() < until);
    await new Promise((r) => setTimeout(r, 200)); // the usage record follows the settle
    return job;
  }

  it('a FLAC that claims 1 s and holds 90 s is charged 90 s (its hold grown), with one usage record', async () => {
    const a = await account(500);
    const job = await runJob(a.key, lyingFlac(90, 1));
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.equal(job.duration, 90);
    const usage = await storedUsage(gw.url, a.token);
    assert.equal(usage.count, 1, 'one record');
    assert.equal(usage.cost, 90_000_000, '90 s at 60 ¢ a minute = 90 ¢');
    assert.equal(usage.wallet.balance_microcents, 410_000_000);
    assert.equal(usage.wallet.held_cents, 0, 'nothing left held');
  });

  it('one that decodes past the longest a job takes fails, free, with its event', async () => {
    const a = await account(500);
    const job = await runJob(a.key, lyingFlac(180, 1));
    assert.equal(job.status, 'failed', JSON.stringify(job));
    assert.equal(job.error.code, 'audio_too_long');
    assert.match(job.error.message, /2 minutes/);
    const usage = await storedUsage(gw.url, a.token);
    assert.equal(usage.cost, 0);
    assert.equal(usage.wallet.balance_microcents, 500_000_000);
    assert.equal(usage.wallet.held_cents, 0);
    assert.ok(gw.events.some((e) => e.event === 'transcription.failed' && e.fields.job_id === job.id && e.fields.error === 'audio_too_long'));
  });

  it('a wallet that covers the claimed length but not the decoded one: failed, free', async () => {
    const a = await account(30); // the 3 s the header implies, not the 90 s it holds
    const job = await runJob(a.key, lyingFlac(90, 1));
    assert.equal(job.status, 'failed', JSON.stringify(job));
    assert.equal(job.error.code, 'insufficient_credit');
    const usage = await storedUsage(gw.url, a.token);
    assert.equal(usage.cost, 0);
    assert.equal(usage.wallet.balance_microcents, 30_000_000);
    assert.equal(usage.wallet.held_cents, 0);
  });

  it('a recording that declares more than a job takes is refused at upload, nothing held or charged', async () => {
    const a = await account(500);
    const res = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', { token: a.key, ...multipartForm({ model: 'stt-dear' }, wavBytes(150)) });
    assert.equal(res.status, 400, res.text);
    assert.equal(res.body.error.code, 'audio_too_long');
    assert.equal(res.body.error.param, 'file');
    const usage = await storedUsage(gw.url, a.token);
    assert.equal(usage.count, 0);
    assert.equal(usage.wallet.balance_microcents, 500_000_000);
  });
});
