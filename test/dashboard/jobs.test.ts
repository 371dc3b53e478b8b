// The transcriptions page in Chromium: the account's asynchronous jobs (submitted through the API to
// a fake Sarvam job API on loopback), newest first, with their status as the API reports it, and
// a failed job's page with its error.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { wavBytes } from '../fakes/audio.ts';
import { startSarvamUpstream, type SarvamUpstream } from '../fakes/sarvam-upstream.ts';
import { multipartForm } from '../transcription/form.ts';
import { ADMIN_TOKEN, call, createKey } from '../helper.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';

describe('dashboard: transcription jobs', () => {
  let d: Dashboard;
  let sarvam: SarvamUpstream;
  before(async () => {
    sarvam = await startSarvamUpstream({ apiKey: 'sv-key' });
    d = await startDashboard({ transcription: { pollMs: 100 } });
    const model = {
      type: 'stt',
      owned_by: 'acme',
      languages: ['hi-IN'],
      jobs: true,
      diarization: true,
      pricing: { cents_per_minute: 0.6 },
      routes: [{ provider: 'sarvam', base_url: sarvam.url, api_key: 'sv-key', upstream_model: 'saaras:v3' }],
    };
    assert.equal((await call(d.base, 'PUT', '/admin/models/stt-jobs', { token: ADMIN_TOKEN, body: model })).status, 201);
  });
  after(async () => {
    await d.close();
    await sarvam.close();
  });

  it('lists the account’s jobs newest first with their status', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, d);
    await page.getByRole('link', { name: 'Transcriptions' }).click();
    await page.getByText('No transcription jobs yet.').waitFor();

    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 100 } })).status, 201);
    const key = (await createKey(d.base, token, { name: 'audio' })).api_key;
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await call(d.base, 'POST', '/v1/audio/transcriptions/jobs', { token: key, ...multipartForm({ model: 'stt-jobs' }, wavBytes(2)) });
      assert.equal(created.status, 202, created.text);
      ids.push(created.body.id);
    }
    let jobs: any[] = [];
    for (let i = 0; i < 300 && !(jobs.length === 2 && jobs.every((j) => j.status === 'completed')); i++) {
      jobs = (await call(d.base, 'GET', '/portal/transcription/jobs', { token })).body.data;
      await sleep(50);
    }
    assert.deepEqual(
      jobs.map((j) => j.status),
      ['completed', 'completed'],
    );

    await page.reload();
    const rows = page.getByTestId('jobs').locator('tbody tr');
    await rows.first().waitFor();
    assert.deepEqual(
      await rows.locator('td:first-child').allTextContents(),
      jobs.map((j) => j.id),
      'newest first, as the API',
    );
    assert.deepEqual(new Set(jobs.map((j) => j.id)), new Set(ids));
    for (const text of await rows.allTextContents()) assert.match(text, /completed.*stt-jobs/);
    await tab.checkA11y('transcriptions');

    // A job the provider fails: the list says so, and its page shows the error's code and message.
    sarvam.failNextJob = { level: 'job', message: 'The audio could not be processed.' };
    const failing = await call(d.base, 'POST', '/v1/audio/transcriptions/jobs', { token: key, ...multipartForm({ model: 'stt-jobs' }, wavBytes(2)) });
    assert.equal(failing.status, 202, failing.text);
    await rows
      .first()
      .getByText(/^failed: /)
      .waitFor({ timeout: 30_000 });
    const failed = (await call(d.base, 'GET', `/portal/transcription/jobs/${failing.body.id}`, { token })).body;
    assert.equal(failed.status, 'failed');
    const srt = await call(d.base, 'GET', `/v1/audio/transcriptions/jobs/${failing.body.id}?response_format=srt`, { token: key });
    assert.deepEqual([srt.status, srt.body.error.code], [409, 'job_not_completed'], 'no transcript to render');
    await rows.first().getByRole('link', { name: failing.body.id }).click();
    await page.getByTestId('job-status').getByText('failed').waitFor();
    const alert = page.getByRole('alert');
    assert.equal(await alert.textContent(), `${failed.error.message} (${failed.error.code})`);
    assert.equal(await page.getByTestId('turns').count(), 0, 'no transcript');
    await tab.checkA11y('a failed transcription');
    tab.assertClean();
    await tab.close();
  });
});
