// The speech pages in Chromium, on the offline engines (stt-local, tts-local), all through the
// cookie session with no API key: a two-speaker recording (LibriVox and codec2 voices, assembled
// by the diarization scripts) dropped on the Transcriptions form becomes a job the list follows to
// completed; its page shows two speakers' turns, renames one in the page, plays a turn's span of
// the recording (served by byte ranges) and downloads the SRT the API gives for the job; another
// account opening the recording's address gets 404. Try speech shows the cost and streams the
// voice through Web Audio; Try recognition transcribes a picked clip and a microphone recording.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { conversationWav, noConversation } from '../transcription/conversation.ts';
import { librivoxWav, missing } from '../speech/helpers.ts';
import { ADMIN_TOKEN, call, createKey } from '../helper.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard, type Tab } from './browser.ts';

const skip = noConversation || missing('ffmpeg', 'pocketsphinx', 'librivox');

describe('dashboard: speech', { skip }, () => {
  let d: Dashboard;
  before(async () => {
    d = await startDashboard({ transcription: { pollMs: 100 } });
  });
  after(async () => d.close());

  /** A signed-up person in a tab, with a dollar of credit; their bearer session for the API's view. */
  async function person(): Promise<{ tab: Tab; token: string }> {
    const tab = await openTab(d);
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 100 } })).status, 201);
    return { tab, token };
  }
  const balance = async (token: string) => (await call(d.base, 'GET', '/portal/wallet', { token })).body.balance_microcents as number;

  it('uploads a two-speaker recording, follows it to completed, plays a turn and downloads the API’s SRT; another account gets 404', async () => {
    const { tab, token } = await person();
    const { page } = tab;
    const audioAnswers: number[] = [];
    page.on('response', (res) => {
      if (/\/portal\/transcription\/jobs\/[^/?]+\/audio$/.test(res.url())) audioAnswers.push(res.status());
    });
    await page.getByRole('link', { name: 'Transcriptions' }).click();
    await page.getByRole('heading', { name: 'Transcribe a recording' }).waitFor();
    await page.getByText('No transcription jobs yet.').waitFor();

    // Dropped on the form, as a person drags a file from their desktop.
    const { bytes } = conversationWav(2);
    const dropped = await page.evaluateHandle(
      `(() => { const data = Uint8Array.from(atob(${JSON.stringify(bytes.toString('base64'))}), (c) => c.charCodeAt(0));
        const dt = new DataTransfer(); dt.items.add(new File([data], 'conversation.wav', { type: 'audio/wav' })); return dt; })()`,
    );
    await page.dispatchEvent('form[aria-label="New transcription"]', 'drop', { dataTransfer: dropped });
    await page.getByText(/conversation\.wav, \d+ KB/).waitFor();
    await page.getByLabel('Speakers (a hint)').fill('2');
    assert.ok(await page.getByLabel('Label speakers').isChecked());
    await page.getByRole('button', { name: 'Upload and transcribe' }).click();
    await page.getByText(/is queued; the list below follows it/).waitFor();

    // The list follows the job until it completes, without a reload.
    const row = page.getByTestId('jobs').locator('tbody tr').first();
    await row.getByText('completed').waitFor({ timeout: 120_000 });
    const id = (await row.locator('td:first-child').textContent())!;
    assert.match(id, /^txjob_[0-9a-f]{24}$/);
    await tab.checkA11y('transcriptions');
    await tab.screenshot('transcriptions');

    await row.getByRole('link', { name: id }).click();
    await page.getByRole('heading', { name: `Transcription ${id}` }).waitFor();
    assert.equal(await page.getByTestId('job-status').textContent(), 'completed');
    const turns = page.getByTestId('turns').locator('button.turn');
    await turns.first().waitFor();
    const speakers = new Set(await page.getByTestId('turns').locator('.who-said').allTextContents());
    assert.deepEqual([...speakers].sort(), ['SPEAKER_00', 'SPEAKER_01'], 'two speakers');
    assert.ok((await turns.count()) >= 2);

    // Renamed in the page only.
    await page.getByLabel('Name for SPEAKER_00').fill('Reader');
    assert.equal(await turns.first().locator('.who-said').textContent(), 'Reader');

    // A click on a turn plays its span of the recording.
    // Polled from here: waitForFunction's string predicate is eval'd in the page once it has to poll,
    // which the dashboard's CSP (script-src 'self') refuses.
    for (const until = Date.now() + 10_000; ((await page.evaluate("document.querySelector('audio').readyState")) as number) < 1; ) {
      assert.ok(Date.now() < until, 'the recording is loaded within 10 s');
      await page.waitForTimeout(50);
    }
    const second = turns.nth(1);
    const span = { start: Number(await second.getAttribute('data-start')), end: Number(await second.getAttribute('data-end')) };
    await second.click();
    await page.waitForTimeout(300);
    const at = (await page.evaluate("document.querySelector('audio').currentTime")) as number;
    assert.ok(at >= span.start && at <= span.end + 0.3, `currentTime ${at} within ${span.start}–${span.end}`);
    assert.ok(audioAnswers.includes(206), `the recording was read by ranges: ${audioAnswers.join(', ')}`);

    // The SRT download is the API's, byte for byte.
    const key = (await createKey(d.base, token, { name: 'check' })).api_key;
    const api = await call(d.base, 'GET', `/v1/audio/transcriptions/jobs/${id}?response_format=srt`, { token: key });
    assert.equal(api.status, 200, api.text);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'SRT' }).click()]);
    assert.equal(download.suggestedFilename(), `${id}.srt`);
    const saved = join(tmpdir(), `gw-dash-${process.pid}-${id}.srt`);
    await download.saveAs(saved); // the browser is remote (the runner's): a copy here
    assert.equal(await readFile(saved, 'utf8'), api.text);
    await rm(saved, { force: true });
    assert.match(api.text, /^1\n00:00:\d\d,\d{3} --> /);

    await tab.checkA11y('a transcription');
    await tab.screenshot('transcription-job');
    tab.assertClean();

    // Another account: the recording's address is 404, as an unknown one is.
    const other = await person();
    // (In a page of its own: the browser then asks for /favicon.ico, a 404 of no interest here.)
    const address = await other.tab.context.newPage();
    const answer = await address.goto(`${d.base}/portal/transcription/jobs/${id}/audio`);
    assert.equal(answer?.status(), 404);
    assert.equal(JSON.parse(await answer!.text()).error.code, 'not_found');
    await address.close();
    await other.tab.page.goto(`${d.base}/dashboard/jobs/${id}`);
    await other.tab.page.getByRole('alert').getByText(`No transcription job '${id}'.`).waitFor();
    other.tab.assertClean();
    await other.tab.close();
    await tab.close();
  });

  it('tries a voice: shows what the text will cost, then streams the speech through Web Audio', async () => {
    const { tab, token } = await person();
    const { page } = tab;
    await page.getByRole('link', { name: 'Try speech' }).click();
    await page.getByRole('heading', { name: 'Try speech' }).waitFor();
    const text = 'The gateway reads this sentence aloud.';
    await page.getByLabel('Text', { exact: true }).fill(text);
    const models = (await call(d.base, 'GET', '/portal/models', { token })).body.data as { id: string; pricing: { cents_per_1k_chars?: number } }[];
    const price = models.find((m) => m.id === 'tts-local')!.pricing.cents_per_1k_chars!;
    const cost = (await page.getByTestId('speech-cost').textContent())!;
    assert.match(cost, new RegExp(`^${text.length} characters, `));
    assert.ok(cost.includes(`${((text.length * price) / 1000).toLocaleString('en-US', { maximumSignificantDigits: 3 })}¢`), cost);
    await page.getByLabel('Voice').selectOption('en-gb');
    const before = await balance(token);
    await page.getByRole('button', { name: 'Speak' }).click();
    await page
      .getByTestId('speech-heard')
      .getByText(/^Received/)
      .waitFor({ timeout: 30_000 });
    const seconds = Number(/([\d.]+) s of audio/.exec((await page.getByTestId('speech-heard').textContent())!)![1]);
    assert.ok(seconds > 1, `${seconds} s of audio`);
    await page.waitForTimeout(200);
    assert.ok((await balance(token)) < before, 'charged to the account');
    await tab.checkA11y('try speech');
    await tab.screenshot('try-speech');
    tab.assertClean();
    await tab.close();
  });

  it('tries recognition: a picked clip and a microphone recording, each with its cost', async () => {
    const { tab } = await person();
    const { page } = tab;
    await page.getByRole('link', { name: 'Try recognition' }).click();
    await page.getByRole('heading', { name: 'Try recognition' }).waitFor();
    await page.getByLabel('Or pick a clip').setInputFiles(librivoxWav('0870'));
    await page.getByRole('button', { name: 'Transcribe', exact: true }).click();
    const said = page.getByTestId('recognized');
    await said.waitFor({ timeout: 30_000 });
    assert.match((await said.textContent())!, /\b(mister|john|would|have)\b/i);
    assert.match((await page.getByTestId('recognition-cost').textContent())!, /billed \d+ s: [\d.]+¢\./);
    await tab.checkA11y('try recognition');
    await tab.screenshot('try-recognition');

    // The (fake) microphone: recorded by MediaRecorder, sent as WebM, transcribed and priced.
    await page.getByRole('button', { name: 'Record from the microphone' }).click();
    await page.getByText('Recording…').waitFor();
    await page.waitForTimeout(1500);
    await page.getByRole('button', { name: 'Stop recording' }).click();
    await page.getByText(/A clip of \d+ KB is ready/).waitFor();
    await page.getByRole('button', { name: 'Transcribe', exact: true }).click();
    await page
      .getByTestId('recognition-cost')
      .getByText(/billed [12] s/)
      .waitFor({ timeout: 30_000 });
    tab.assertClean();
    await tab.close();
  });
});
