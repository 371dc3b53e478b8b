// The webhooks page in Chromium, against a real receiver on loopback: create (the secret shown once,
// never after a reload), test ping, deliveries, re-enable one that failures disabled, delete.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { answer, startReceiver, type Receiver } from '../webhooks/receiver.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';

async function until<T>(what: string, f: () => Promise<T | false>): Promise<T> {
  for (let i = 0; i < 250; i++) {
    const v = await f();
    if (v !== false) return v;
    await sleep(20);
  }
  assert.fail(`timed out waiting for ${what}`);
}

describe('dashboard: webhooks', () => {
  let d: Dashboard;
  let r: Receiver;
  before(async () => {
    r = await startReceiver(answer(500));
    d = await startDashboard({ webhooks: { allowPrivateNetworks: true, allowHttp: true, sweepIntervalMs: 200 } });
  });
  after(async () => {
    await d.close();
    await r.close();
  });

  it('creates a webhook showing its secret once, pings it, lists deliveries, re-enables it after failures disabled it, deletes it', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    page.on('dialog', (dialog) => void dialog.accept());
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;

    await page.goto(`${d.base}/dashboard/webhooks`);
    const form = page.getByRole('form', { name: 'New webhook' });
    await form.getByLabel('Endpoint URL').fill(`${r.url}/hooks`);
    await form.getByLabel('topup').check();
    await form.getByRole('button', { name: 'Create webhook' }).click();
    const secret = await page.getByLabel('Webhook signing secret').textContent();
    assert.match(secret!, /^whsec_/);
    const row = page.locator('tr', { hasText: `${r.url}/hooks` });
    await row.waitFor();
    const listed = await call(d.base, 'GET', '/portal/webhooks', { token });
    const hook = listed.body.data[0];
    assert.deepEqual(hook.events.sort(), ['low_balance', 'topup']);
    await tab.checkA11y('webhooks');
    await page.reload();
    await row.waitFor();
    assert.ok(!(await page.content()).includes(secret!), 'shown once: not after a reload');

    await row.getByRole('button', { name: /Send test/ }).click();
    await page.getByRole('status').filter({ hasText: 'Test ping: failed: http_500' }).waitFor();
    r.set(answer(204));
    await row.getByRole('button', { name: /Send test/ }).click();
    await page.getByRole('status').filter({ hasText: 'Test ping: delivered (HTTP 204' }).waitFor();

    // Ten failed deliveries in a row disable it.
    r.set(answer(503));
    for (let i = 0; i < 10; i++)
      assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 1 } })).status, 201);
    await until('disabled', async () => (await call(d.base, 'GET', `/portal/webhooks/${hook.id}`, { token })).body.status === 'disabled');
    await page.reload();
    await row.getByRole('cell', { name: 'disabled', exact: true }).waitFor();
    await tab.screenshot('webhooks');
    r.set(answer(204));
    await row.getByRole('button', { name: /Re-enable/ }).click();
    await row.getByRole('cell', { name: 'enabled', exact: true }).waitFor();
    assert.equal((await call(d.base, 'GET', `/portal/webhooks/${hook.id}`, { token })).body.status, 'enabled');

    await row.getByRole('link', { name: /Deliveries/ }).click();
    await page.getByRole('heading', { name: 'Webhook deliveries' }).waitFor();
    const deliveries = page.getByTestId('deliveries').locator('tbody tr');
    await deliveries.first().waitFor();
    const api = (await call(d.base, 'GET', `/portal/webhooks/${hook.id}/deliveries?limit=20`, { token })).body.data;
    assert.equal(await deliveries.count(), Math.min(20, api.length));
    assert.ok((await deliveries.first().textContent())!.includes(api[0].event));
    await tab.checkA11y('webhook deliveries');

    await page.goBack();
    await row.getByRole('button', { name: /Delete/ }).click();
    await page.getByText('No webhooks yet.').waitFor();
    assert.equal((await call(d.base, 'GET', `/portal/webhooks/${hook.id}`, { token })).status, 404);
    tab.assertClean();
    await tab.close();
  });
});
