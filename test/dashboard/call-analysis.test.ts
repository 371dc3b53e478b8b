// A call's analysis on its page in Chromium (issue 43 §2): calls through the simulator carrier, the
// analysis's llm the fake OpenAI upstream (its wire format), held by the test so that the page is
// seen pending, then following it to the summary, the fields as a table (a value the conversation
// did not settle shown so), and the cost the API says; an upstream failing three times: failed, why,
// and free; a busy call: skipped. The Calls list shows each call's analysis status.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey } from '../helper.ts';
import { ended, place, waitForCall } from '../voice/helpers.ts';
import { apiSession, openTab, signUpInBrowser } from './browser.ts';
import { voiceDashboard } from './voice.ts';
import type { CalleeScript } from '../../src/config.ts';

/** A short call with a conversation (a callee turn): answers, keys 1, hangs up (about 2 s). */
const KEYS = '+919800000020';
const KEYS_CALLEE: CalleeScript = {
  to: KEYS,
  answer: 'answer',
  ring_ms: 100,
  steps: [{ silence_ms: 300 }, { dtmf: '1' }, { silence_ms: 900 }, { hangup: true }],
};
const BUSY = '+919800000002';
const FIELDS = [
  { name: 'reason', type: 'string', description: 'Why the callee called', enum: ['balance', 'card', 'other'] },
  { name: 'amount', type: 'number', description: 'The amount in rupees' },
  { name: 'wants_callback', type: 'boolean', description: 'Whether the callee wants a call back' },
  { name: 'branch', type: 'string', description: 'The branch named' },
];
const ANALYSIS = { model: 'chat-test', fields: FIELDS };

describe('dashboard: a call’s analysis', () => {
  const v = voiceDashboard({ callees: [KEYS_CALLEE], voice: { analysisBackoffMs: 20 }, llm: true });

  /** A signed-up person in a tab with credit, and a key to place calls with. */
  async function person() {
    const tab = await openTab(v.d);
    const token = await apiSession(v.d, await signUpInBrowser(tab, v.d));
    const me = (await call(v.d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(v.d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 1000 } })).status, 201);
    return { tab, key: (await createKey(v.d.base, token)).api_key };
  }
  const dial = async (key: string, to: string) => {
    const res = await place(v.d.gw, key, { model: 'voice-test', to, analysis: ANALYSIS });
    assert.equal(res.status, 202, res.text);
    return res.body.id as string;
  };

  it('shows the analysis pending, then its summary, fields and cost as the API has them; the list shows its status', async () => {
    const { tab, key } = await person();
    const { page } = tab;
    const reply = { summary: 'The callee asked about a card and pressed 1.', fields: { reason: 'card', amount: 1500, wants_callback: true, branch: null } };
    let release!: () => void;
    v.llm.next({ reply: JSON.stringify(reply), until: new Promise<void>((r) => (release = r)) });
    const id = await dial(key, KEYS);
    await page.goto(`${v.d.base}/dashboard/calls/${id}`);
    const status = page.getByTestId('analysis-status');
    await status.getByText('Being analysed').waitFor({ timeout: 10_000 });
    await page.getByTestId('call-status').getByText('completed').waitFor({ timeout: 20_000 });
    assert.match((await status.textContent())!, /^Being analysed/, 'still pending once the call ended: the llm has not answered');
    assert.equal(await page.getByTestId('analysis-fields').count(), 0);
    release();
    // The page follows it (re-read while pending) without a reload.
    await page.getByTestId('analysis-summary').getByText(reply.summary).waitFor({ timeout: 10_000 });
    const c = await waitForCall(v.d.gw, key, id, (x) => ended(x) && x.analysis?.status === 'completed');
    assert.deepEqual(c.analysis.fields, reply.fields);
    assert.equal(await status.textContent(), 'Analysed by chat-test.');
    const rows = page.getByTestId('analysis-fields').locator('tbody tr');
    const cells: string[][] = [];
    for (let i = 0; i < (await rows.count()); i++) cells.push(await rows.nth(i).locator('td').allTextContents());
    assert.deepEqual(cells, [
      ['reason', 'card'],
      ['amount', '1500'],
      ['wants_callback', 'yes'],
      ['branch', '— (not settled)'],
    ]);
    assert.ok(c.analysis.cost_cents > 0);
    // To the micro-cent billed (a few hundred tokens cost far less than a cent: never shown as $0.00).
    const shown = (await page.getByTestId('analysis-cost').textContent())!;
    assert.equal(Math.round(Number(shown.replace(/^\$/, '')) * 100_000_000), Math.round(c.analysis.cost_cents * 1_000_000), shown);
    await page
      .getByText(`${c.analysis.usage.prompt_tokens.toLocaleString('en-US')} in, ${c.analysis.usage.completion_tokens.toLocaleString('en-US')} out`)
      .waitFor();
    await tab.checkA11y('a call’s analysis');
    await tab.screenshot('call-analysis');

    await page.goto(`${v.d.base}/dashboard/calls`);
    const listed = page.locator(`[data-call-id="${id}"]`);
    await listed.waitFor();
    assert.equal((await listed.locator('td').allTextContents()).at(-1), 'analysed');
    tab.assertClean();
    await tab.close();
  });

  it('says why an analysis failed (and that it was free), and that a call without a conversation was not analysed', async () => {
    const { tab, key } = await person();
    const { page } = tab;
    v.llm.next({ status: 500 }, { status: 500 }, { status: 500 });
    const failed = await dial(key, KEYS);
    const f = await waitForCall(v.d.gw, key, failed, (x) => ended(x) && x.analysis?.status === 'failed', 30_000);
    await page.goto(`${v.d.base}/dashboard/calls/${failed}`);
    await page.getByTestId('analysis-status').getByText('The analysis failed after 3 attempts').waitFor();
    assert.equal(
      await page.getByTestId('analysis-status').textContent(),
      `The analysis failed after 3 attempts: ${f.analysis.error.message} (${f.analysis.error.code}). It was not billed; the call's own bill is unchanged.`,
    );
    assert.deepEqual([await page.getByTestId('analysis-fields').count(), await page.getByTestId('analysis-cost').count()], [0, 0]);

    const busy = await dial(key, BUSY);
    const b = await waitForCall(v.d.gw, key, busy, (x) => ended(x) && x.analysis?.status === 'skipped');
    assert.equal(b.analysis.cost_cents, 0);
    await page.goto(`${v.d.base}/dashboard/calls/${busy}`);
    await page.getByTestId('analysis-status').getByText('Not analysed: there was no conversation to read').waitFor();
    await tab.checkA11y('a skipped analysis');

    await page.goto(`${v.d.base}/dashboard/calls`);
    for (const [id, want] of [
      [failed, 'failed'],
      [busy, 'skipped'],
    ]) {
      const row = page.locator(`[data-call-id="${id}"]`);
      await row.waitFor();
      assert.equal((await row.locator('td').allTextContents()).at(-1), want, id);
    }
    tab.assertClean();
    await tab.close();
  });
});
