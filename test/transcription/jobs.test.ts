// Transcription jobs end to end through a real gateway on the offline engine (stt-local): a
// two-speaker conversation of real recorded voices is uploaded, queued, transcribed, diarized
// (SPEAKER_00/01 by first appearance), charged once by its decoded seconds, listed and read back;
// another account cannot see it; a refused request keeps nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { conversationWav, noConversation as skip } from './conversation.ts';
import { multipartForm } from './form.ts';
import { call, fundedAccount, startTestGateway, type TestGateway } from '../helper.ts';

describe('transcription jobs on the offline engine', { skip }, () => {
  let gw: TestGateway;
  let owner: { token: string; key: string };
  let stranger: { token: string; key: string };

  before(async () => {
    gw = await startTestGateway();
    owner = await fundedAccount(gw.url);
    stranger = await fundedAccount(gw.url);
  });
  after(async () => gw?.destroy());

  const balance = async (token: string) => (await call(gw.url, 'GET', '/portal/wallet', { token })).body.balance_microcents as number;

  it('queues, transcribes and diarizes a conversation, charges its seconds once, and lists it', async () => {
    const { bytes, seconds } = conversationWav();
    const before = await balance(owner.token);
    const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', {
      token: owner.key,
      ...multipartForm({ model: 'stt-local', num_speakers: '2' }, bytes),
    });
    assert.equal(created.status, 202, created.text);
    assert.match(created.body.id, /^txjob_[0-9a-f]{24}$/);
    assert.equal(created.body.status, 'queued');

    let job: any;
    const until = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 250));
      job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${created.body.id}`, { token: owner.key })).body;
    } while ((job.status === 'queued' || job.status === 'processing') && Date.now() < until);
    assert.equal(job.status, 'completed', JSON.stringify(job));
    assert.equal(job.object, 'transcription.job');
    assert.ok(Math.abs(job.duration - seconds) < 0.05, `${job.duration} vs ${seconds}`);
    assert.ok(job.text.length > 10);
    const speakers = job.segments.map((s: any) => s.speaker);
    assert.equal(speakers[0], 'SPEAKER_00', 'numbered by first appearance');
    assert.deepEqual([...new Set(speakers)].sort(), ['SPEAKER_00', 'SPEAKER_01']);
    assert.ok(job.segments.every((s: any) => s.end > s.start && typeof s.text === 'string'));

    // Charged once, for the decoded seconds rounded up, at 0.1 cent a minute.
    const expected = Math.ceil(seconds - 1e-9) * (0.1 / 60) * 1e6;
    await new Promise((r) => setTimeout(r, 200));
    assert.ok(Math.abs(before - (await balance(owner.token)) - expected) < 1.0001, `${before - (await balance(owner.token))} vs ${expected}`);

    const listed = await call(gw.url, 'GET', '/v1/audio/transcriptions/jobs?limit=5', { token: owner.key });
    assert.equal(listed.status, 200, listed.text);
    assert.equal(listed.body.object, 'list');
    assert.equal(listed.body.data[0].id, created.body.id);
    const done = await call(gw.url, 'GET', '/v1/audio/transcriptions/jobs?status=completed', { token: owner.key });
    assert.equal(done.body.data.length, 1);
    const none = await call(gw.url, 'GET', '/v1/audio/transcriptions/jobs?status=failed', { token: owner.key });
    assert.equal(none.body.data.length, 0);

    // Another account: not found, and its list is empty.
    const theirs = await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${created.body.id}`, { token: stranger.key });
    assert.equal(theirs.status, 404);
    assert.equal((await call(gw.url, 'GET', '/v1/audio/transcriptions/jobs', { token: stranger.key })).body.data.length, 0);

    // The dashboard's list: the same jobs for the account's session, in the portal's page shape.
    const portal = await call(gw.url, 'GET', '/portal/transcription/jobs?limit=1', { token: owner.token });
    assert.equal(portal.status, 200, portal.text);
    assert.deepEqual([portal.body.data.map((j: { id: string }) => j.id), portal.body.has_more, portal.body.next_after], [[created.body.id], false, null]);
    assert.equal((await call(gw.url, 'GET', '/portal/transcription/jobs?status=completed', { token: owner.token })).body.data.length, 1);
    assert.deepEqual((await call(gw.url, 'GET', '/portal/transcription/jobs', { token: stranger.token })).body, {
      data: [],
      has_more: false,
      next_after: null,
    });
  });

  it('diarize=false labels every segment SPEAKER_00; a recording without a declared duration is measured and charged exactly; a refused request keeps no job and no charge', async () => {
    const { bytes: wavBytes, seconds } = conversationWav(1);
    // WebM written to a pipe declares no duration: the job measures it by decoding.
    const webm = spawnSync('ffmpeg', ['-v', 'error', '-i', 'pipe:0', '-c:a', 'libopus', '-f', 'webm', 'pipe:1'], { input: wavBytes, maxBuffer: 64 << 20 });
    assert.equal(webm.status, 0, String(webm.stderr));
    const bytes = webm.stdout;
    const before = await balance(stranger.token);
    const bad = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', {
      token: stranger.key,
      ...multipartForm({ model: 'stt-local', language_code: 'hi-IN' }, bytes),
    });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'language_not_supported');
    assert.equal(await balance(stranger.token), before);
    const created = await call(gw.url, 'POST', '/v1/audio/transcriptions/jobs', {
      token: stranger.key,
      ...multipartForm({ model: 'stt-local', diarize: 'false' }, bytes),
    });
    assert.equal(created.status, 202, created.text);
    let job: any;
    const until = Date.now() + 60_000;
    do {
      await new Promise((r) => setTimeout(r, 250));
      job = (await call(gw.url, 'GET', `/v1/audio/transcriptions/jobs/${created.body.id}`, { token: stranger.key })).body;
    } while (job.status !== 'completed' && job.status !== 'failed' && Date.now() < until);
    assert.equal(job.status, 'completed');
    assert.ok(job.segments.every((s: any) => s.speaker === 'SPEAKER_00'));
    assert.ok(Math.abs(job.duration - seconds) < 0.1, `${job.duration} vs ${seconds}`);
    await new Promise((r) => setTimeout(r, 200));
    const expected = Math.ceil(job.duration - 1e-9) * (0.1 / 60) * 1e6;
    assert.ok(Math.abs(before - (await balance(stranger.token)) - expected) < 1.0001, `${before - (await balance(stranger.token))} vs ${expected}`);
    const list = await call(gw.url, 'GET', '/v1/audio/transcriptions/jobs', { token: stranger.key });
    assert.deepEqual(
      list.body.data.map((j: any) => j.id),
      [created.body.id],
    );
  });
});
