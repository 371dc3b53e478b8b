// The organization page in Chromium, two people in two browser contexts: create, invite by e-mail,
// accept, remove, leave, change a member's role, transfer ownership, delete. A member sees no owner or admin action, and the
// API refuses those actions to the member's own signed-in page too.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call } from '../helper.ts';
import { apiSession, freshEmail, openTab, PASSWORD, signInInBrowser, signUpInBrowser, startDashboard, type Dashboard, type Tab } from './browser.ts';

describe('dashboard: organization', () => {
  let d: Dashboard;
  before(async () => {
    d = await startDashboard();
  });
  after(() => d.close());

  const goOrg = async (tab: Tab) => {
    await tab.page.goto(`${d.base}/dashboard/organization`);
    await tab.page.getByRole('heading', { name: 'Organization', exact: true }).waitFor();
  };
  const invite = async (owner: Tab, email: string, role = 'member') => {
    const form = owner.page.getByRole('form', { name: 'Invite a member' });
    await form.getByLabel('E-mail to invite').fill(email);
    await form.getByLabel('Role').selectOption(role);
    await form.getByRole('button', { name: 'Send invitation' }).click();
    await owner.page.getByTestId('pending-invitations').getByText(email).waitFor();
  };
  const accept = async (tab: Tab) => {
    await goOrg(tab);
    await tab.page.getByRole('button', { name: /^Accept/ }).click();
    await tab.page.getByTestId('my-role').waitFor();
  };
  /** Calls the API from the tab's page (same origin, its cookie) as the dashboard does: [[status, code]]. */
  const sameOrigin = async (tab: Tab, calls: [string, string, unknown][]) =>
    (await tab.page.evaluate(
      (cs) =>
        Promise.all(
          cs.map(([method, path, body]) =>
            fetch(path, {
              method,
              credentials: 'same-origin',
              headers: { 'x-gateway-client': 'dashboard', ...(body ? { 'content-type': 'application/json' } : {}) },
              body: body ? JSON.stringify(body) : undefined,
            }).then(async (r) => [r.status, ((await r.json()) as { error?: { code: string } }).error?.code]),
          ),
        ),
      calls,
    )) as [number, string][];
  /** Whether the tab's settings and webhooks pages offer changes; back on the organization page after. */
  const roleViews = async (tab: Tab, label: string) => {
    const { page } = tab;
    await page.goto(`${d.base}/dashboard/settings`);
    await page.getByRole('heading', { name: 'Low-balance alert' }).waitFor();
    await tab.checkA11y(`settings (${label})`);
    const billing = (await page.getByRole('button', { name: 'Save' }).count()) === 1;
    await page.goto(`${d.base}/dashboard/webhooks`);
    await page.getByRole('heading', { name: 'Webhooks', exact: true }).waitFor();
    const webhooks = (await page.getByRole('form', { name: 'New webhook' }).count()) === 1;
    await goOrg(tab);
    return { billing, webhooks };
  };
  const members = async (tab: Tab) => (await tab.page.getByTestId('members').locator('tbody tr td:first-child').allTextContents()).sort();

  it('creates, invites, shows each role only what the API lets it do, removes, leaves, changes roles, transfers and deletes', async () => {
    const a = await openTab(d);
    const b = await openTab(d);
    for (const t of [a, b]) t.page.on('dialog', (dialog) => void dialog.accept());
    const ownerEmail = await signUpInBrowser(a, d);
    const memberEmail = freshEmail('member');
    assert.equal((await call(d.base, 'POST', '/portal/auth/signup', { body: { email: memberEmail, password: PASSWORD } })).status, 201);
    await signInInBrowser(b, d, memberEmail);
    const memberId = (await call(d.base, 'GET', '/portal/me', { token: await apiSession(d, memberEmail) })).body.user.id as number;

    await goOrg(a);
    await a.page.getByLabel('Organization name').fill('Acme Research');
    await a.page.getByRole('button', { name: 'Create organization' }).click();
    await a.page.getByRole('heading', { name: 'Acme Research' }).waitFor();
    assert.equal(await a.page.getByTestId('my-role').textContent(), 'owner');
    await invite(a, memberEmail);
    await accept(b);
    assert.equal(await b.page.getByTestId('my-role').textContent(), 'member');
    await a.page.reload();
    await a.page.getByTestId('members').getByRole('cell', { name: memberEmail, exact: true }).waitFor();
    assert.deepEqual(await members(a), [memberEmail, ownerEmail].sort());
    await a.checkA11y('organization (owner)');
    await a.screenshot('organization');
    assert.deepEqual(await roleViews(a, 'owner'), { billing: true, webhooks: true }, 'the owner sets the threshold and manages webhooks');

    // The member sees no owner or admin action...
    await b.page.getByTestId('members').waitFor();
    assert.equal(await b.page.getByRole('region', { name: 'Owner actions' }).count(), 0);
    assert.equal(await b.page.getByRole('form', { name: 'Invite a member' }).count(), 0);
    assert.equal(await b.page.getByRole('button', { name: /^Remove/ }).count(), 0);
    assert.equal(await b.page.getByRole('button', { name: 'Leave organization' }).count(), 1);
    await b.checkA11y('organization (member)');
    assert.deepEqual(await roleViews(b, 'member'), { billing: false, webhooks: false }, 'a member does neither');
    // ...and the API refuses them to the member's own page (same origin, the member's cookie).
    const refused = await sameOrigin(b, [
      ['DELETE', '/portal/org', undefined],
      ['POST', '/portal/org/transfer', { user_id: 1 }],
      ['POST', '/portal/org/members', { email: 'x@example.com', role: 'member' }],
      ['PUT', '/portal/settings', { low_balance_threshold_cents: 5 }],
      ['PATCH', `/portal/org/members/${memberId}`, { role: 'admin' }],
      ['POST', '/portal/webhooks', { url: 'https://example.com/hooks', events: ['topup'] }],
    ]);
    assert.deepEqual(refused, Array(6).fill([403, 'role_forbidden']));
    assert.equal((await call(d.base, 'GET', '/portal/org', { token: await apiSession(d, ownerEmail) })).status, 200, 'the organization is still there');

    // Remove, then leave.
    await a.page.getByRole('button', { name: `Remove ${memberEmail}` }).click();
    await a.page.getByTestId('members').getByRole('cell', { name: memberEmail, exact: true }).waitFor({ state: 'detached' });
    await invite(a, memberEmail);
    await accept(b);
    await b.page.getByRole('button', { name: 'Leave organization' }).click();
    await b.page.getByRole('button', { name: 'Create organization' }).waitFor();
    await a.page.reload();
    await a.page.getByTestId('members').waitFor();
    assert.deepEqual(await members(a), [ownerEmail]);

    // Roles: the owner promotes the member to admin; the member's view then shows the admin actions
    // (and still no role control: only the owner changes roles, which the API enforces too).
    await invite(a, memberEmail);
    await accept(b);
    assert.equal(await b.page.getByTestId('my-role').textContent(), 'member');
    await a.page.reload();
    await a.page.getByRole('button', { name: `Make admin ${memberEmail}` }).click();
    await a.page.getByRole('button', { name: `Make member ${memberEmail}` }).waitFor();
    await a.page
      .getByTestId('members')
      .getByRole('row', { name: new RegExp(memberEmail) })
      .getByRole('cell', { name: 'admin', exact: true })
      .waitFor();
    const roleOf = async (email: string) =>
      (await call(d.base, 'GET', '/portal/org/members', { token: await apiSession(d, ownerEmail) })).body.members.find(
        (m: { email: string }) => m.email === email,
      )?.role;
    assert.equal(await roleOf(memberEmail), 'admin');
    await b.page.reload();
    await b.page.getByTestId('my-role').filter({ hasText: 'admin' }).waitFor();
    assert.equal(await b.page.getByRole('form', { name: 'Invite a member' }).count(), 1, 'an admin invites');
    assert.equal(await b.page.getByRole('button', { name: /^Make (admin|member)/ }).count(), 0, 'an admin changes no roles');
    assert.equal(await b.page.getByRole('region', { name: 'Owner actions' }).count(), 0);
    await b.checkA11y('organization (admin)');
    assert.deepEqual(await roleViews(b, 'admin'), { billing: false, webhooks: true }, 'an admin manages webhooks, not billing');
    assert.deepEqual(
      await sameOrigin(b, [['PATCH', `/portal/org/members/${memberId}`, { role: 'member' }]]),
      [[403, 'role_forbidden']],
      'the API refuses an admin too',
    );
    await a.page.getByRole('button', { name: `Make member ${memberEmail}` }).click();
    await a.page.getByRole('button', { name: `Make admin ${memberEmail}` }).waitFor();
    assert.equal(await roleOf(memberEmail), 'member');
    await b.page.reload();
    await b.page.getByTestId('my-role').filter({ hasText: 'member' }).waitFor();
    assert.equal(await b.page.getByRole('form', { name: 'Invite a member' }).count(), 0);
    await a.page.getByRole('button', { name: `Make admin ${memberEmail}` }).click();
    await a.page.getByRole('button', { name: `Make member ${memberEmail}` }).waitFor();

    // Transfer ownership: the former owner becomes an admin and loses the owner actions.
    await b.page.reload();
    assert.equal(await b.page.getByTestId('my-role').textContent(), 'admin');
    await a.page.getByLabel('Transfer ownership to').selectOption({ label: `${memberEmail} (admin)` });
    await a.page.getByRole('button', { name: 'Transfer ownership' }).click();
    await a.page.getByTestId('my-role').filter({ hasText: 'admin' }).waitFor();
    assert.equal(await a.page.getByRole('region', { name: 'Owner actions' }).count(), 0);
    assert.equal(await a.page.getByRole('form', { name: 'Invite a member' }).count(), 1, 'an admin invites');
    assert.equal(await a.page.getByRole('button', { name: /^Remove/ }).count(), 0, 'an admin cannot remove the owner');
    await b.page.reload();
    assert.equal(await b.page.getByTestId('my-role').textContent(), 'owner');

    // Delete (the wallet is empty).
    await b.page.getByRole('button', { name: 'Delete organization' }).click();
    await b.page.getByRole('button', { name: 'Create organization' }).waitFor();
    assert.equal((await call(d.base, 'GET', '/portal/me', { token: await apiSession(d, ownerEmail) })).body.organization, null);
    a.assertClean();
    b.assertClean();
    await a.close();
    await b.close();
  });
});
