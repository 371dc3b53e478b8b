// The operator pages in Chromium: the admin token is exchanged for an operator session cookie (the
// token is kept neither in the page nor in the cookie), the operator bundle loads only after that,
// upstream keys are never shown, and access, top-ups, key limits and intent packs work through the
// pages as the API has them.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup } from '../helper.ts';
import { openTab, startDashboard, type Dashboard } from './browser.ts';

const UPSTREAM_SECRET = 'sk-upstream-never-shown-0123456789';

describe('dashboard: operator', () => {
  let d: Dashboard;
  before(async () => {
    d = await startDashboard();
    const r = await call(d.base, 'PUT', '/admin/models/chat-ops', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 'test',
        context_window: 4096,
        max_output_tokens: 256,
        pricing: { input_cents_per_mtok: 100, output_cents_per_mtok: 200 },
        routes: [{ provider: 'openai', base_url: 'http://127.0.0.1:9/v1', api_key: UPSTREAM_SECRET, upstream_model: 'gpt-up' }],
      },
    });
    assert.equal(r.status, 201, r.text);
  });
  after(() => d.close());

  it('opens an operator session with the admin token, loads the operator bundle only then, never shows upstream keys', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    // The operator bundle: the dynamic import built from operator.tsx (the Campaigns pages are another).
    const operatorChunk = Object.values(d.build.files)
      .flatMap((f) => f.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path))
      .find((path) => d.build.files[path]?.entry === 'src/dashboard/operator/operator.tsx')!;
    assert.ok(operatorChunk);
    const loaded: string[] = [];
    page.on('request', (req) => loaded.push(new URL(req.url()).pathname));

    await page.goto(`${d.base}/dashboard/operator`);
    await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();
    await tab.checkA11y('operator sign-in');
    await page.getByLabel('Admin token').fill('not-the-admin-token-at-all');
    await page.getByRole('button', { name: 'Open operator session' }).click();
    await page.getByRole('alert').filter({ hasText: 'invalid_admin_token' }).waitFor();
    assert.ok(!loaded.some((p) => p.endsWith(operatorChunk)), 'the operator bundle is not loaded before sign-in');

    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Open operator session' }).click();
    await page.getByRole('heading', { name: 'Operator', exact: true }).waitFor();
    assert.ok(
      loaded.some((p) => p.endsWith(operatorChunk)),
      'loaded after sign-in',
    );
    const cookie = (await tab.context.cookies()).find((c) => c.name === '__Host-gw_admin');
    assert.ok(cookie && cookie.httpOnly && cookie.value !== ADMIN_TOKEN && !cookie.value.includes(ADMIN_TOKEN));
    assert.equal(await page.evaluate('document.cookie'), '');

    const models = page.getByTestId('models');
    await models.getByText('chat-ops').waitFor();
    assert.ok((await models.textContent())!.includes('key set'));
    const html = await page.content();
    assert.ok(!html.includes(UPSTREAM_SECRET), 'the upstream key is never shown');
    assert.ok(!html.includes(ADMIN_TOKEN), 'the admin token is not kept in the page');
    await tab.checkA11y('operator models');
    await tab.screenshot('operator-models');
    tab.assertClean();
    await tab.close();
  });

  it('finds an account, verifies it, restricts its models, credits a top-up, sets key limits, lists intent packs, ends the session', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const user = await signup(d.base);
    const key = await createKey(d.base, user.token, { name: 'limited' });
    await page.goto(`${d.base}/dashboard/operator?tab=accounts`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Open operator session' }).click();

    await page.getByLabel('Account id').fill(String(user.id));
    await page.getByRole('button', { name: 'Show access' }).click();
    await page.getByTestId('access').filter({ hasText: 'Every model.' }).waitFor();
    await page.getByLabel('Allowed models (comma separated; empty: every model)').fill('chat-ops');
    await page.getByRole('button', { name: 'Save access' }).click();
    await page.getByTestId('access').filter({ hasText: 'Only: chat-ops' }).waitFor();
    assert.deepEqual((await call(d.base, 'GET', `/admin/access/user/${user.id}`, { token: ADMIN_TOKEN })).body.models, ['chat-ops']);

    await page.getByLabel('Find a user by e-mail').fill(user.email);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByTestId('users').getByText(`${user.email} (user ${user.id}), KYC not verified`).waitFor();
    await page.getByRole('button', { name: `Mark verified ${user.email}` }).click();
    await page.getByTestId('users').getByText(`${user.email} (user ${user.id}), KYC verified`).waitFor();
    assert.equal((await call(d.base, 'GET', `/admin/users?email=${encodeURIComponent(user.email)}`, { token: ADMIN_TOKEN })).body.data[0].kyc_verified, true);

    await page.getByRole('link', { name: 'Top-ups' }).click();
    const topup = page.getByRole('form', { name: 'Top-up' });
    await topup.getByLabel('Account id').fill(String(user.id));
    await topup.getByLabel('Amount in dollars').fill('5');
    await topup.getByLabel('Payment reference').fill('wire-77');
    await topup.getByRole('button', { name: 'Credit wallet' }).click();
    await page.getByRole('status').filter({ hasText: 'Credited $5.00' }).waitFor();
    assert.equal((await call(d.base, 'GET', '/portal/wallet', { token: user.token })).body.balance_cents, 500);

    await page.getByRole('link', { name: 'Key limits' }).click();
    const limits = page.getByRole('form', { name: 'Key limits' });
    await limits.getByLabel('Key id').fill(String(key.id));
    await limits.getByLabel('rpm').fill('30');
    await limits.getByRole('button', { name: 'Save limits' }).click();
    await page.getByRole('status').filter({ hasText: 'rpm 30' }).waitFor();

    await page.getByRole('link', { name: 'Intent packs' }).click();
    const packs = (await call(d.base, 'GET', '/admin/intent-packs', { token: ADMIN_TOKEN })).body.data as { id: string }[];
    if (packs.length > 0) await page.getByTestId('intent-packs').getByText(packs[0]!.id, { exact: true }).waitFor();
    await tab.checkA11y('operator intent packs');

    await page.getByRole('button', { name: 'End operator session' }).click();
    await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();
    const after = await page.evaluate("fetch('/admin/session', { headers: { 'x-gateway-client': 'dashboard' } }).then((r) => r.status)");
    assert.equal(after, 401);
    tab.assertClean();
    await tab.close();
  });

  it('brings the sign-in back when the operator session ends elsewhere or expires', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    await page.goto(`${d.base}/dashboard/operator?tab=accounts`);
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Open operator session' }).click();
    await page.getByLabel('Find a user by e-mail').waitFor();
    // Ended from another tab of the same browser: the next operator call finds it gone.
    const ended = await page.evaluate(async () => (await fetch('/admin/session', { method: 'DELETE', headers: { 'x-gateway-client': 'dashboard' } })).status);
    assert.equal(ended, 200);
    await page.getByLabel('Find a user by e-mail').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();

    // Expiry: the page's clock passes the session's end with no call made.
    await page.clock.install();
    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Open operator session' }).click();
    await page.getByLabel('Find a user by e-mail').waitFor();
    await page.clock.fastForward('16:00');
    await page.getByRole('heading', { name: 'Operator sign-in' }).waitFor();
    tab.assertClean();
    await tab.close();
  });
});
