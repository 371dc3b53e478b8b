// The Calls page in Chromium, through the cookie session: calls placed through the simulator carrier
// (a scripted callee, a scripted stt upstream for exact words, the demo intent pack) appear in the
// list, which follows them to their end without a reload; a call's page shows its transcript with
// the greeting the callee cut off split into what was heard and what was not, the key it pressed,
// the dispute the agent raised (the amount the callee gave), and the cost the API charged; a live call is hung
// up from its page with the keyboard; another account opening a call's address is told it does
// not exist.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey } from '../helper.ts';
import { place, ended, waitForCall } from '../voice/helpers.ts';
import { CALLEES, putScriptedVoice, ScriptedStt } from '../voice/simulated.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard, type Tab } from './browser.ts';

/** Talks over the greeting about an ATM, says yes to the dispute, presses 1 after the confirmation, hangs up. */
const CALLEE = {
  to: '+919800000040',
  answer: 'answer',
  ring_ms: 100,
  steps: [
    { wait_agent: 'speaking', ms: 800 },
    { say: 'the ATM did not give money but my account got debited' },
    { wait_agent: 'done', ms: 200 },
    { say: 'yes please' },
    { wait_agent: 'done', ms: 200 },
    { dtmf: '1' },
    { silence_ms: 300 },
    { hangup: true },
  ],
};

/** A voicemail greeting ending in a beep (config/default.json's +919800000007, its hang-up sooner). */
const VOICEMAIL = {
  to: '+919800000041',
  answer: 'answer',
  ring_ms: 100,
  steps: [
    { silence_ms: 400 },
    { say: "Hi, you have reached Asha. I can't take your call right now. Please leave a message after the tone.", voice: 'en-us-slt' },
    { silence_ms: 300 },
    { beep_ms: 400 },
    { silence_ms: 8000 },
    { hangup: true },
  ],
};

describe('dashboard: calls', () => {
  let d: Dashboard;
  let stt: ScriptedStt;
  before(async () => {
    stt = await ScriptedStt.start();
    d = await startDashboard({ voice: { simulator: { callees: [CALLEE, VOICEMAIL, ...CALLEES] } } });
    await putScriptedVoice(d.base, stt, 'voice-test', [{ provider: 'simulator' }]);
  });
  after(async () => {
    await d?.close();
    await stt?.server.close();
  });

  /** A signed-up person in a tab, with ten dollars of credit and an API key (calls are placed by the API), and their user id. */
  async function person(): Promise<{ tab: Tab; key: string; id: number }> {
    const tab = await openTab(d);
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 1000 } })).status, 201);
    return { tab, key: (await createKey(d.base, token)).api_key, id: me };
  }
  const dial = async (key: string, to: string) => {
    const res = await place(d.gw, key, { model: 'voice-test', to });
    assert.equal(res.status, 202, res.text);
    return res.body.id as string;
  };

  it('follows a call to its end, shows what the callee heard of the agent and the cost; hangs up a live call', async () => {
    const { tab, key } = await person();
    const { page } = tab;
    await page.getByRole('link', { name: 'Calls' }).click();
    await page.getByRole('heading', { name: 'Calls' }).waitFor();
    await page.getByText('No calls yet.').waitFor();

    stt.say('ATM did not give money but 2000 rupees got debited from my account', 'haan');
    const id = await dial(key, CALLEE.to);
    const row = page.locator(`[data-call-id="${id}"]`);
    await row.waitFor({ timeout: 10_000 }); // within the 5 s re-read
    await row.getByText('completed').waitFor({ timeout: 40_000 }); // followed every 2 s while it runs
    const c = await waitForCall(d.gw, key, id, ended);
    assert.equal(c.status, 'completed', JSON.stringify(c));
    const dollars = (cents: number) => `$${(cents / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;
    await row.getByText(dollars(c.cost_cents)).waitFor();
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual(
      [...cells.slice(0, 6), ...cells.slice(8)],
      // No analysis asked: the demo pack's own (intent, actions, entities) is on the call's page only.
      [id, 'outbound', CALLEE.to, 'voice-test', 'completed', c.end_reason.replace(/_/g, ' '), String(c.billed_seconds), dollars(c.cost_cents), '—'],
    );
    assert.match(cells[6]!, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    assert.match(cells[7]!, /^0:\d\d\.\d$/);
    await tab.checkA11y('calls');
    await tab.screenshot('calls');
    // The status filter is the API's, kept in the URL.
    await page.getByLabel('Status').selectOption('busy');
    await page.getByText('No call matches these filters.').waitFor();
    assert.match(page.url(), /\/dashboard\/calls\?status=busy$/);
    await page.getByLabel('Status').selectOption('completed');
    await row.waitFor();

    // Opened with the keyboard.
    await row.getByRole('link', { name: id }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Call ${id}` }).waitFor();
    assert.equal(await page.getByTestId('call-status').textContent(), 'completed');
    assert.equal(await page.getByTestId('call-cost').textContent(), dollars(c.cost_cents));
    const greeting = c.transcript[0] as { text: string; heard_text: string; interrupted: boolean };
    assert.equal(greeting.interrupted, true, JSON.stringify(c.transcript));
    const first = page.getByTestId('call-turns').locator('li').first();
    assert.equal(await first.getByTestId('heard').textContent(), greeting.heard_text);
    assert.equal(await first.getByTestId('unheard').textContent(), ` (not heard:)${greeting.text.slice(greeting.heard_text.length)}`);
    assert.match((await first.textContent())!, /^Agent 0:\d\d\.\d–0:\d\d\.\d, interrupted/);
    const turns = page.getByTestId('call-turns').locator('li');
    assert.equal(await turns.count(), c.transcript.length);
    assert.equal(await turns.nth(1).locator('.said').textContent(), 'ATM did not give money but 2000 rupees got debited from my account');
    assert.deepEqual(c.transcript.at(-1), { role: 'callee', text: '1', dtmf: '1', start: c.transcript.at(-1).start, end: c.transcript.at(-1).end });
    assert.equal(await turns.last().locator('.said').textContent(), 'Pressed 1');
    assert.equal(
      await turns.nth(2).locator('small').textContent(),
      'intent BANKING.ATM.CASH_NOT_DISPENSED · response BANKING.DISPUTE.ASK_RAISE · amount: 2000',
    );
    // The outcome: the dispute raised, with the entities the API gives it, and the conversation's final state.
    const [raised] = c.outcome.actions as { action: string; intent: string; entities: Record<string, number> }[];
    assert.deepEqual(
      [c.outcome.actions.length, raised!.action, raised!.intent],
      [1, 'CREATE_DISPUTE', 'BANKING.ATM.CASH_NOT_DISPENSED'],
      JSON.stringify(c.outcome),
    );
    const cells2 = await page.getByTestId('call-actions').locator('tbody tr td').allTextContents();
    assert.deepEqual(cells2.slice(0, 3), [
      raised!.action,
      raised!.intent,
      Object.entries(raised!.entities)
        .map(([k, v]) => `${k}: ${v}`)
        .join(', ') || '—',
    ]);
    await page.getByText(`Final state: ${c.outcome.final_state}`).waitFor();
    await tab.checkA11y('a call');
    await tab.screenshot('call');

    // A silent callee stays on the line: its page follows it live and hangs it up.
    const live = await dial(key, '+919800000099');
    await page.goto(`${d.base}/dashboard/calls/${live}`);
    await page.getByTestId('call-status').getByText('in progress').waitFor({ timeout: 10_000 });
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Hang up' }).focus();
    await page.keyboard.press('Enter');
    await page.getByTestId('call-status').getByText('completed').waitFor({ timeout: 10_000 });
    await page.getByText('api hangup').waitFor();
    const hung = await waitForCall(d.gw, key, live, ended);
    assert.deepEqual([hung.status, hung.end_reason], ['completed', 'api_hangup']);
    await page.getByTestId('call-cost').getByText(dollars(hung.cost_cents)).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Hang up' }).count(), 0, 'no control on an ended call');
    tab.assertClean();

    // Another account: the call's page says there is no such call.
    const other = await person();
    await other.tab.page.goto(`${d.base}/dashboard/calls/${id}`);
    await other.tab.page
      .getByRole('alert')
      .getByText(/not_found/)
      .waitFor();
    other.tab.assertClean();
    await other.tab.close();
    await tab.close();
  });

  it('a call an answering machine took says so (answered by machine, ended voicemail)', async () => {
    const { tab, key } = await person();
    const { page } = tab;
    const res = await place(d.gw, key, { model: 'voice-test', to: VOICEMAIL.to, voicemail: { action: 'hangup' } });
    assert.equal(res.status, 202, res.text);
    const c = await waitForCall(d.gw, key, res.body.id as string, ended);
    assert.deepEqual([c.answered_by, c.end_reason], ['machine', 'voicemail'], JSON.stringify(c));
    await page.goto(`${d.base}/dashboard/calls/${c.id}`);
    await page.getByTestId('call-answered-by').getByText('machine').waitFor();
    assert.equal(await page.getByTestId('call-transferred-to').count(), 0, 'not transferred');
    tab.assertClean();
    await tab.close();
  });

  it("lists an inbound call (a caller ringing the account's number) with the rest, and its page says so", async () => {
    const { tab, id: me } = await person();
    const { page } = tab;
    const number = { model: 'voice-test', owner: { type: 'user', id: me }, first_message: { mode: 'agent_first' } };
    assert.equal((await call(d.base, 'PUT', '/admin/voice/numbers/+918047491840', { token: ADMIN_TOKEN, body: number })).status, 201);
    const rang = await call(d.base, 'POST', '/admin/voice/simulator/calls', { token: ADMIN_TOKEN, body: { to: '+918047491840', from: '+919800000012' } });
    assert.equal(rang.body.taken, true, rang.text);
    await page.goto(`${d.base}/dashboard/calls`);
    const row = page.locator(`[data-call-id="${rang.body.call_id}"]`);
    await row.getByText('completed').waitFor({ timeout: 30_000 });
    const cells = await row.locator('td').allTextContents();
    assert.deepEqual(cells.slice(1, 4), ['inbound', '+918047491840', 'voice-test']);
    await row.getByRole('link', { name: rang.body.call_id }).click();
    assert.equal(await page.getByTestId('call-direction').textContent(), 'inbound');
    tab.assertClean();
    await tab.close();
  });
});
