// The wallet and settings pages in Chromium: balance, subscription, identity verification and the
// top-up history as the API has them; the low-balance threshold set through the page is the API's.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call } from '../helper.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';

describe('dashboard: wallet and settings', () => {
  let d: Dashboard;
  before(async () => {
    d = await startDashboard();
  });
  after(() => d.close());

  it('shows the balance, subscription, KYC state and top-ups; sets the low-balance threshold', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    const admin = (method: string, path: string, body: unknown) => call(d.base, method, path, { token: ADMIN_TOKEN, body });
    assert.equal((await admin('POST', '/admin/topups', { user_id: me, amount_cents: 1250, reference: 'bank-1' })).status, 201);
    assert.equal((await admin('PUT', `/admin/subscriptions/user/${me}`, { plan: 'starter' })).status, 200);

    await page.goto(`${d.base}/dashboard/wallet`);
    await page.getByTestId('balance').waitFor();
    assert.equal(await page.getByTestId('kyc').textContent(), 'not verified', 'a new account is not verified');
    // The operator verifies the account (the operator page calls the same endpoint); the wallet says so.
    assert.equal((await admin('PUT', `/admin/users/${me}/kyc`, { verified: true })).status, 200);
    assert.equal((await call(d.base, 'GET', '/portal/wallet', { token })).body.kyc_verified, true);
    await page.reload();
    await page
      .getByTestId('kyc')
      .filter({ hasText: /^verified$/ })
      .waitFor();
    const wallet = (await call(d.base, 'GET', '/portal/wallet', { token })).body;
    assert.equal(wallet.balance_cents, 2250, 'the top-up and the plan credit');
    assert.equal(await page.getByTestId('balance').textContent(), '$22.50');
    await page.getByTestId('subscription').getByText('starter').waitFor();
    const topups = page.getByTestId('topups').locator('tbody tr');
    await topups.first().waitFor();
    const api = (await call(d.base, 'GET', '/portal/wallet/topups', { token })).body.data;
    assert.equal(await topups.count(), api.length);
    assert.ok((await page.getByTestId('topups').textContent())!.includes('bank-1'));
    await tab.checkA11y('wallet');
    await tab.screenshot('wallet');

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Threshold in dollars').fill('7.5');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: '$7.50' }).waitFor();
    assert.equal((await call(d.base, 'GET', '/portal/wallet', { token })).body.low_balance_threshold_cents, 750);
    await page.reload();
    assert.equal(await page.getByLabel('Threshold in dollars').inputValue(), '7.50');
    await tab.checkA11y('settings');
    await tab.screenshot('settings');
    tab.assertClean();
    await tab.close();
  });
});
