// The dashboard's shell: how /dashboard is served (CSP, caching, SPA fallback) and, in Chromium,
// sign-up, sign-in, the layout, sign-out; the session cookie is invisible to page scripts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DASHBOARD_CSP } from '../../src/http/routes/dashboard.ts';
import { call } from '../helper.ts';
import { apiSession, freshEmail, openTab, PASSWORD, signInInBrowser, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';

describe('dashboard shell', () => {
  let d: Dashboard;
  before(async () => {
    d = await startDashboard();
  });
  after(() => d.close());

  it('serves index.html for /dashboard and its app paths with the strict CSP, never cached; hashed assets immutable', async () => {
    for (const path of ['/dashboard', '/dashboard/', '/dashboard/keys', '/dashboard/webhooks/12?x=1']) {
      const res = await call(d.base, 'GET', path);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('content-type')!, /^text\/html/);
      assert.equal(res.headers.get('content-security-policy'), DASHBOARD_CSP);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer');
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.ok(!/<script>|<style|style=/.test(res.text), 'no inline script or style');
    }
    const js = await call(d.base, 'GET', `/dashboard/assets/${d.build.entry}`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get('content-type')!, /^text\/javascript/);
    assert.equal(js.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.equal(js.headers.get('content-security-policy'), DASHBOARD_CSP);
    assert.match(d.build.entry, /^app-[A-Z0-9]{8}\.js$/, 'hashed name');
    const missing = await call(d.base, 'GET', '/dashboard/assets/nope-12345678.js');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'not_found');
    const traversal = await call(d.base, 'GET', '/dashboard/assets/..%2F..%2Fpackage.json');
    assert.equal(traversal.status, 404);
  });

  it('signs up, shows the layout, signs out and in again; the cookie is not readable by page scripts', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    await page.goto(`${d.base}/dashboard`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.match(page.url(), /\/dashboard\/signin$/);
    await tab.checkA11y('sign-in');
    await tab.screenshot('sign-in');

    // A wrong password shows the API's envelope message.
    await page.getByLabel('E-mail').fill('nobody@example.com');
    await page.getByLabel('Password').fill('wrong password!!');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'invalid_credentials' }).waitFor();

    await page.getByRole('link', { name: 'Create one' }).click();
    await page.getByRole('heading', { name: 'Create an account' }).waitFor();
    await tab.checkA11y('sign-up');
    const email = await signUpInBrowser(tab, d);
    assert.match(page.url(), /\/dashboard\/keys$/);
    await page.getByText(email).waitFor();
    assert.equal(await page.evaluate('document.cookie'), '', 'HttpOnly: the page cannot read the session');
    const cookies = await tab.context.cookies();
    const session = cookies.find((c) => c.name === '__Host-gw_session');
    assert.ok(session, 'the session cookie is set');
    assert.equal(session.httpOnly, true);
    assert.equal(session.secure, true);
    assert.equal(session.sameSite, 'Strict');
    await tab.checkA11y('keys (empty)');

    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.equal(
      (await tab.context.cookies()).find((c) => c.name === '__Host-gw_session'),
      undefined,
      'the cookie is cleared',
    );
    // The server session is gone too: the old cookie value no longer works.
    const replay = await call(d.base, 'GET', '/portal/me', { headers: { cookie: `__Host-gw_session=${session.value}` } });
    assert.equal(replay.status, 401);

    await signInInBrowser(tab, d, email);
    await page.goto(`${d.base}/dashboard/usage?from=2026-01-01`);
    await page.getByRole('heading', { name: 'Usage', exact: true }).waitFor();
    tab.assertClean();
    await tab.close();
  });

  it('a signed-out visit makes no failing request, with no cookie or a stale one', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const asked: string[] = [];
    page.on('request', (req) => {
      if (req.url().startsWith(`${d.base}/portal/`)) asked.push(new URL(req.url()).pathname);
    });
    for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/signup']) {
      await page.goto(`${d.base}${path}`);
      await page.getByRole('heading', { name: path === '/dashboard/signup' ? 'Create an account' : 'Sign in' }).waitFor();
    }
    assert.match(page.url(), /\/dashboard\/signup$/);
    assert.ok(asked.length >= 3, `the page asked who is signed in on each visit: ${asked.join(', ')}`);
    // A session that ended elsewhere (here: every session of the account logged out by an API
    // client) leaves a stale cookie: no failure either.
    const email = freshEmail();
    assert.equal((await call(d.base, 'POST', '/portal/auth/signup', { body: { email, password: PASSWORD } })).status, 201);
    await signInInBrowser(tab, d, email);
    const out = await call(d.base, 'POST', '/portal/auth/logout', { token: await apiSession(d, email), body: { everywhere: true } });
    assert.equal(out.status, 200);
    await page.goto(`${d.base}/dashboard/wallet`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.match(page.url(), /\/dashboard\/signin\?next=wallet$/);
    assert.ok(
      (await tab.context.cookies()).some((c) => c.name === '__Host-gw_session'),
      'the stale cookie was sent',
    );
    assert.deepEqual(tab.failedRequests, []);
    tab.assertClean();
    await tab.close();
  });

  it('sends a signed-out visitor of a deep link to sign-in and back to it after', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const email = freshEmail();
    const up = await call(d.base, 'POST', '/portal/auth/signup', { body: { email, password: PASSWORD } });
    assert.equal(up.status, 201);
    await page.goto(`${d.base}/dashboard/wallet`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Wallet', exact: true }).waitFor();
    assert.match(page.url(), /\/dashboard\/wallet$/);
    tab.assertClean();
    await tab.close();
  });
});
