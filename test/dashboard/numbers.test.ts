// The Numbers page in Chromium, through the cookie session: the numbers an operator assigned the
// account, each with its model, agent, first message, language and voice (the model's default where
// the operator set none), never another account's, and nothing to change them with; its link to the
// inbound calls opens the Calls list filtered by direction (in the URL), where an inbound call (the
// simulator's caller ringing the account's number) is apart from the account's outbound calls.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { ended, place, waitForCall } from '../voice/helpers.ts';
import { apiSession, openTab, signUpInBrowser } from './browser.ts';
import { voiceDashboard } from './voice.ts';

describe('dashboard: numbers', () => {
  const v = voiceDashboard();

  const assign = async (number: string, owner: { type: 'user'; id: number }, extra: Record<string, unknown> = {}) => {
    const res = await call(v.d.base, 'PUT', `/admin/voice/numbers/${number}`, { token: ADMIN_TOKEN, body: { model: 'voice-test', owner, ...extra } });
    assert.equal(res.status, 201, res.text);
  };

  it("shows the account's numbers as the operator set them, read-only, and its inbound calls apart from the outbound", async () => {
    const tab = await openTab(v.d);
    const { page } = tab;
    const token = await apiSession(v.d, await signUpInBrowser(tab, v.d));
    const me = (await call(v.d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(v.d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 1000 } })).status, 201);
    const key = (await createKey(v.d.base, token)).api_key;
    await assign(
      '+918047491870',
      { type: 'user', id: me },
      {
        agent: { type: 'intent', intent_model: 'intent-demo' },
        first_message: { text: 'Welcome to the bank, how can I help?', mode: 'agent_first' },
        language: 'en-IN',
        max_duration_seconds: 300,
      },
    );
    await assign('+918047491871', { type: 'user', id: me });
    await assign(
      '+918047491872',
      { type: 'user', id: me },
      {
        agent: { type: 'llm', llm_model: 'chat-test', system_prompt: 'You are the bank’s night desk.' },
        first_message: { mode: 'wait_for_callee' },
      },
    );
    const stranger = await signup(v.d.base);
    await assign('+918047491879', { type: 'user', id: stranger.id });

    await page.getByRole('link', { name: 'Numbers' }).click();
    await page.getByRole('heading', { name: 'Numbers' }).waitFor();
    const rows = page.getByTestId('numbers').locator('tbody tr');
    await rows.first().waitFor();
    const cells: string[][] = [];
    for (let i = 0; i < (await rows.count()); i++) cells.push(await rows.nth(i).locator('td').allTextContents());
    const unset = "the model's default";
    assert.deepEqual(
      cells.map((c) => c.slice(0, 7)),
      [
        ['+918047491870', 'voice-test', 'intent: intent-demo', '“Welcome to the bank, how can I help?” (agent first)', 'en-IN', unset, '300 s'],
        ['+918047491871', 'voice-test', unset, unset, unset, unset, unset],
        ['+918047491872', 'voice-test', 'llm: chat-testPromptYou are the bank’s night desk.', 'none: waits for the caller', unset, unset, unset],
      ],
      "its own numbers only, in order; the stranger's is not there",
    );
    assert.match(cells[0]![7]!, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
    // An LLM agent's prompt is behind a disclosure.
    const prompt = rows.nth(2).getByText('You are the bank’s night desk.');
    assert.equal(await prompt.isVisible(), false);
    await rows.nth(2).getByText('Prompt', { exact: true }).click();
    await prompt.waitFor();
    assert.equal(await page.locator('main').getByRole('button').count(), 0, 'nothing to change a number with');
    assert.equal(await page.locator('main form').count(), 0);
    await tab.checkA11y('numbers');
    await tab.screenshot('numbers');

    // A caller rings the first number; the account also places an outbound call.
    const rang = await call(v.d.base, 'POST', '/admin/voice/simulator/calls', {
      token: ADMIN_TOKEN,
      body: { to: '+918047491870', from: '+919800000012' },
    });
    assert.equal(rang.body.taken, true, rang.text);
    const out = await place(v.d.gw, key, { model: 'voice-test', to: '+919800000002' });
    assert.equal(out.status, 202, out.text);
    await waitForCall(v.d.gw, key, rang.body.call_id, ended, 30_000);
    await waitForCall(v.d.gw, key, out.body.id, ended);

    await page.getByRole('link', { name: 'inbound calls' }).click();
    await page.getByRole('heading', { name: 'Calls' }).waitFor();
    assert.match(page.url(), /\/dashboard\/calls\?direction=inbound$/);
    assert.equal(await page.getByLabel('Direction').inputValue(), 'inbound');
    const inbound = page.locator(`[data-call-id="${rang.body.call_id}"]`);
    const outbound = page.locator(`[data-call-id="${out.body.id}"]`);
    await inbound.waitFor();
    assert.deepEqual((await inbound.locator('td').allTextContents()).slice(1, 3), ['inbound', '+918047491870']);
    assert.equal(await page.locator('[data-call-id]').count(), 1, 'the inbound call only');
    await page.getByLabel('Direction').selectOption('outbound');
    await outbound.waitFor();
    assert.equal(await inbound.count(), 0);
    assert.match(page.url(), /\/dashboard\/calls\?direction=outbound$/);
    await page.getByLabel('Direction').selectOption('');
    await inbound.waitFor();
    assert.equal(await page.locator('[data-call-id]').count(), 2);
    tab.assertClean();
    await tab.close();
  });
});
