// The Campaigns pages in Chromium, through the cookie session, against the gateway's batches on the
// simulator carrier (scripted callees that answer and hang up, are busy, or stay on the line): a CSV
// with an invalid row is previewed with the row and why before anything is sent; the estimate the
// API gives for the body is shown before Start; the campaign's page follows its progress to
// completed without a reload, each attempt's call opens the call's page, and the results file has one
// row per number; pause, resume and cancel act on a running campaign as the API says.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from '../voice/simulated.ts';
import { ist, TestClock } from '../voice/batches-helpers.ts';
import { parseCsv } from '../../src/dashboard/ui/csv.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard, type Tab } from './browser.ts';

/** Answers, hears the greeting out, hangs up. */
const quick = (to: string) => ({ to, answer: 'answer', ring_ms: 100, steps: [{ wait_agent: 'done', ms: 100 }, { hangup: true }] });
/** Answers and stays on the line, silent, until hung up. */
const STAYS = { to: '+919800000072', answer: 'answer', ring_ms: 100, steps: [{ silence_ms: 60_000 }, { hangup: true }] };
const BUSY = '+919800000002';

const dollars = (cents: number) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;

describe('dashboard: campaigns', () => {
  let d: Dashboard;
  let stt: ScriptedStt;
  before(async () => {
    stt = await ScriptedStt.start();
    // The gateway's clock at noon in India, inside the legal calling hours whatever the hour of the run.
    d = await startDashboard(
      {
        voice: {
          batches: { pollMs: 100, creditRecheckMs: 300, maxSleepMs: 1000 },
          simulator: { callees: [quick('+919800000070'), quick('+919800000071'), STAYS, ...CALLEES] },
        },
      },
      { now: new TestClock(ist(12, 0)).now },
    );
    await putScriptedVoice(d.base, stt, 'voice-test', [{ provider: 'simulator' }]);
  });
  after(async () => {
    await d?.close();
    await stt?.server.close();
  });

  /** A signed-up person in a tab with ten dollars of credit, and a bearer session of theirs to ask the API. */
  async function person(cents = 1000): Promise<{ tab: Tab; token: string; me: number }> {
    const tab = await openTab(d);
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: cents } })).status, 201);
    return { tab, token, me };
  }

  /** Opens New campaign and picks `csv` as the list. */
  async function pickList(tab: Tab, csv: string) {
    const { page } = tab;
    await page.goto(`${d.base}/dashboard/campaigns`);
    await page.getByRole('link', { name: 'New campaign' }).click();
    await page.getByRole('heading', { name: 'New campaign' }).waitFor();
    await page.getByLabel('List of numbers (CSV)').setInputFiles({ name: 'list.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  }
  /** The same, for a list that reads, with the model voice-test. */
  async function newCampaign(tab: Tab, csv: string) {
    await pickList(tab, csv);
    await tab.page.getByTestId('list-summary').waitFor();
    await tab.page.getByLabel('Voice model').selectOption('voice-test');
  }

  it('previews a CSV with its invalid row, shows the estimate, follows the campaign to completed; its calls open, its results have a row per number', async () => {
    const { tab, token } = await person();
    const { page } = tab;
    await page.getByRole('link', { name: 'Campaigns' }).click();
    await page.getByText('No campaigns yet.').waitFor();

    const csv =
      '\uFEFFto,name,metadata.crm_id\r\n+919800000070,Asha,C-1\r\n98000 00071,"Rao, B.",C-2\r\n+91 98000 00071,"Rao, B.",C-3\r\n+919800000002,Ravi,C-4\r\n';
    await newCampaign(tab, csv);
    assert.equal(await page.getByTestId('list-summary').textContent(), '4 rows: 3 to call, 1 invalid (not sent). Variables: name. Metadata: crm_id.');
    assert.deepEqual(await page.getByTestId('list-invalid').locator('tbody td').allTextContents(), [
      '3',
      '98000 00071',
      'Not a number in international form (+, the country code, the number).',
    ]);
    assert.equal(await page.getByRole('button', { name: 'Start campaign' }).isDisabled(), true, 'no start before an estimate');
    await tab.checkA11y('new campaign');

    // The estimate shown is the API's for exactly this body.
    const calls = [
      { to: '+919800000070', variables: { name: 'Asha' }, metadata: { crm_id: 'C-1' } },
      { to: '+919800000071', variables: { name: 'Rao, B.' }, metadata: { crm_id: 'C-3' } },
      { to: BUSY, variables: { name: 'Ravi' }, metadata: { crm_id: 'C-4' } },
    ];
    const expected = await call(d.base, 'POST', '/portal/voice/batches/estimate', { token, body: { model: 'voice-test', calls } });
    assert.equal(expected.status, 200, expected.text);
    await page.getByRole('button', { name: 'Estimate cost' }).click();
    const { min, max } = expected.body.cost_cents as { min: number; max: number };
    assert.equal(await page.getByTestId('estimate-range').textContent(), `${dollars(min)} to ${dollars(max)}`);
    await tab.screenshot('campaign-new');

    await page.getByRole('button', { name: 'Start campaign' }).click();
    await page.getByRole('heading', { name: /^Campaign batch_/ }).waitFor();
    const id = page.url().split('/').pop()!;
    // Followed live (no reload) to the end.
    await page.getByTestId('campaign-status').getByText('completed').waitFor({ timeout: 60_000 });
    const b = (await call(d.base, 'GET', `/portal/voice/batches/${id}`, { token })).body;
    assert.deepEqual([b.status, b.counts.total, b.counts.completed, b.counts.busy], ['completed', 3, 2, 1], JSON.stringify(b.counts));
    assert.deepEqual(
      b.calls.data.map((r: { to: string; metadata: Record<string, string> }) => [r.to, r.metadata.crm_id]),
      calls.map((c) => [c.to, c.metadata.crm_id]),
    );
    await page.getByText('3 of 3 numbers have an outcome').waitFor();
    assert.equal(await page.getByTestId('campaign-counts').locator('[data-count="completed"]').textContent(), '2');
    assert.equal(await page.getByTestId('campaign-cost').textContent(), dollars(b.cost_cents));
    await tab.checkA11y('a campaign');
    await tab.screenshot('campaign');

    // The results, as the API's file, one row per number.
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download results (CSV)' }).click();
    const file = await download;
    assert.equal(file.suggestedFilename(), `campaign-${id}.csv`);
    // Saved through playwright (the run's browser is connected remotely: the download has no local path).
    const saved = join(tmpdir(), `gw-campaign-${process.pid}-${id}.csv`);
    await file.saveAs(saved);
    const results = parseCsv(await readFile(saved, 'utf8')).map((r) => r.fields);
    await rm(saved, { force: true });
    const api = await call(d.base, 'GET', `/portal/voice/batches/${id}/results`, { token });
    assert.deepEqual(
      results,
      parseCsv(api.text).map((r) => r.fields),
      'the API file as it is',
    );
    const [head, ...rows] = results;
    assert.equal(rows.length, 3);
    const col = (name: string) => head!.indexOf(name);
    assert.deepEqual(
      // The API writes a leading apostrophe before a "+" so that a spreadsheet does not read the number as a formula.
      rows.map((r) => [r[col('to')]!.replace(/^'/, ''), r[col('status')]]),
      [
        ['+919800000070', 'completed'],
        ['+919800000071', 'completed'],
        [BUSY, 'busy'],
      ],
    );

    // An attempt's call opens the call's page.
    const first = b.calls.data[0].attempts[0].call_id as string;
    await page.locator('[data-row="0"]').getByRole('link', { name: first }).click();
    await page.getByRole('heading', { name: `Call ${first}` }).waitFor();
    assert.equal(await page.getByTestId('call-status').textContent(), 'completed');

    // The list shows it, with its outcome counts and cost.
    await page.getByRole('link', { name: 'Campaigns' }).click();
    const row = page.locator(`[data-batch-id="${id}"]`);
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual(cells.slice(1, 7), ['voice-test', 'completed', '3', '3', '2', dollars(b.cost_cents)]);
    await tab.checkA11y('campaigns');
    await tab.screenshot('campaigns');
    tab.assertClean();
    await tab.close();
  });

  it('pauses, resumes and cancels a running campaign (the call in progress finishes), and says a bad file is refused', async () => {
    const { tab, token } = await person();
    const { page } = tab;
    await pickList(tab, 'mobile,name\n+919800000070,A\n');
    await page
      .getByTestId('list-error')
      .getByText(/No number column/)
      .waitFor();
    assert.equal(await page.getByRole('button', { name: 'Estimate cost' }).isDisabled(), true);

    await newCampaign(tab, `to\n${STAYS.to}\n+919800000070\n+919800000071\n`);
    // A window of the person's own outside India's legal hours: the estimate shows the API's refusal.
    await page.getByLabel('My own window').check();
    await page.getByLabel('Time zone').selectOption('Asia/Kolkata');
    await page.getByLabel('From').fill('08:00');
    await page.getByRole('button', { name: 'Estimate cost' }).click();
    await page
      .getByRole('alert')
      .getByText(/falls outside the legal calling hours of IN/)
      .waitFor();
    assert.equal(await page.getByRole('button', { name: 'Start campaign' }).isDisabled(), true);
    await page.getByLabel("The legal hours of the numbers' country").check();
    await page.getByLabel('Most calls at once (optional)').fill('1');
    await page.getByRole('button', { name: 'Estimate cost' }).click();
    await page.getByTestId('estimate').waitFor();
    await page.getByRole('button', { name: 'Start campaign' }).click();
    await page.getByRole('heading', { name: /^Campaign batch_/ }).waitFor();
    const id = page.url().split('/').pop()!;
    const batch = async () => (await call(d.base, 'GET', `/portal/voice/batches/${id}`, { token })).body;
    // The silent callee holds the one line; the other two wait.
    await page.locator('[data-row="0"]').getByText('in progress').waitFor({ timeout: 20_000 });

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByTestId('campaign-status').getByText('paused').waitFor();
    await page
      .getByTestId('campaign-paused')
      .getByText(/Paused from here or the API/)
      .waitFor();
    assert.deepEqual([(await batch()).status, (await batch()).paused_reason], ['paused', 'api']);
    await tab.checkA11y('a paused campaign');

    await page.getByRole('button', { name: 'Resume' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    assert.notEqual((await batch()).status, 'paused');

    page.once('dialog', (dialog) => {
      assert.match(dialog.message(), /^Cancel this campaign\? The 2 numbers not yet called are not called/);
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'Cancel campaign' }).click();
    await page
      .getByTestId('campaign-status')
      .getByText(/cancelling|canceled/)
      .waitFor();
    const b = await batch();
    assert.deepEqual([b.counts.canceled, b.counts.in_progress], [2, 1], JSON.stringify(b.counts));
    // The call in progress finishes (hung up here through the API), and the campaign ends canceled.
    // (The batch lists an attempt once it ended: the live call is found among the account's calls.)
    const calls = (await call(d.base, 'GET', '/portal/voice/calls?status=in_progress', { token })).body.data as { id: string; to: string }[];
    const live = calls.find((c) => c.to === STAYS.to)?.id;
    assert.ok(live, JSON.stringify(calls));
    assert.equal((await call(d.base, 'POST', `/portal/voice/calls/${live}/hangup`, { token })).status, 200);
    await page.getByTestId('campaign-status').getByText('canceled').waitFor({ timeout: 20_000 });
    assert.equal(await page.getByRole('button', { name: 'Cancel campaign' }).count(), 0, 'no control on an ended campaign');
    tab.assertClean();
    await tab.close();
  });

  it('says a campaign the wallet cannot pay for is paused, links to the wallet, and goes on after a top-up', async () => {
    const { tab, me } = await person(3); // less than a minute of voice-test (6 cents a minute)
    const { page } = tab;
    await newCampaign(tab, 'to\n+919800000070\n');
    await page.getByLabel('Attempts per number').fill('2');
    await page.getByRole('button', { name: 'Estimate cost' }).click();
    await page
      .getByTestId('estimate')
      .getByText(/for 1 number, at most 2 calls in all with retries\./)
      .waitFor();
    await page.getByRole('button', { name: 'Start campaign' }).click();
    const paused = page.getByTestId('campaign-paused');
    await paused.getByText(/the wallet cannot pay for the next call/).waitFor({ timeout: 20_000 });
    assert.equal(await page.getByTestId('campaign-status').textContent(), 'paused');
    await tab.checkA11y('a campaign paused for credit');
    const url = page.url();
    await paused.getByRole('link', { name: 'Top up the wallet' }).click();
    await page.getByRole('heading', { name: 'Wallet', exact: true }).waitFor();
    assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 100 } })).status, 201);
    await page.goto(url);
    await page.getByTestId('campaign-status').getByText('completed').waitFor({ timeout: 30_000 });
    assert.equal(await paused.count(), 0);
    tab.assertClean();
    await tab.close();
  });
});
