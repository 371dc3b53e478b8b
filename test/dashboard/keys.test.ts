// The keys page in Chromium: create with name, expiry, scopes and a limit; a full key of any status
// appears only on an explicit click and is gone from the page a minute later; revoke (the key is
// refused at once); search over all keys (not the current page) and server pagination, with the
// filter kept in the URL.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, createKey } from '../helper.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';
import { copyKeys } from './seed.ts';

describe('dashboard: API keys', () => {
  let d: Dashboard;
  before(async () => {
    d = await startDashboard({ keys: { maxActivePerUser: 100_000 } });
  });
  after(() => d.close());

  it('creates a key with name, expiry, scopes and a limit; shows the full key only on a click, for a minute; revokes it', async () => {
    const tab = await openTab(d, { clock: true });
    const { page } = tab;
    page.on('dialog', (dialog) => void dialog.accept());
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);

    await page.getByRole('button', { name: 'Create key' }).click();
    const form = page.getByRole('form', { name: 'New key' });
    await form.getByLabel('Name').fill('ci deploy');
    await form.getByLabel('Expires (end of this UTC day)').fill('2030-01-31');
    await form.getByLabel('chat').check();
    await form.getByLabel('embeddings').check();
    await form.getByLabel('Requests a minute').fill('60');
    await tab.checkA11y('keys: create form');
    await form.getByRole('button', { name: 'Create' }).click();

    const row = page.locator('tr', { hasText: 'ci deploy' });
    await row.waitFor();
    const listed = await call(d.base, 'GET', '/portal/keys', { token });
    assert.equal(listed.status, 200);
    const key = listed.body.data[0];
    assert.deepEqual(
      [key.name, key.scopes, key.expires_at, key.rpm, key.status],
      ['ci deploy', ['chat', 'embeddings'], '2030-01-31T23:59:59.000Z', 60, 'active'],
    );
    const full = (await call(d.base, 'GET', `/portal/keys/${key.id}`, { token })).body.api_key as string;
    const secret = page.getByLabel('Full key ci deploy');
    assert.equal(await secret.textContent(), full, 'the new key is shown once, right after creation');

    await page.clock.fastForward('01:01');
    await secret.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(full), 'gone from the page after a minute');

    await row.getByRole('button', { name: 'Reveal ci deploy' }).click();
    assert.equal(await secret.textContent(), full);
    assert.ok(!page.url().includes(full), 'never in the URL');
    await page.clock.fastForward('00:59');
    assert.equal(await secret.count(), 1, 'still there before the minute is up');
    await page.clock.fastForward('00:02');
    await secret.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(full));

    await row.getByRole('button', { name: 'Revoke ci deploy' }).click();
    await row.getByRole('cell', { name: 'revoked' }).waitFor();
    assert.equal((await call(d.base, 'GET', `/portal/keys/${key.id}`, { token })).body.status, 'revoked');
    assert.equal(await row.getByRole('button', { name: /^Revoke/ }).count(), 0, 'a revoked key has nothing left to revoke');
    tab.assertClean();
    await tab.close();
  });

  it('reveals any key at any time (made elsewhere, revoked, expired); a revocation on the page refuses the very next request', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    page.on('dialog', (dialog) => void dialog.accept());
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const scripted = await createKey(d.base, token, { name: 'made by a script' });
    const expiring = await createKey(d.base, token, { name: 'soon expired' });
    await d.gw.store
      .collection<{ _id: number; expires_at: Date | null }>('api_keys')
      .updateOne({ _id: expiring.id }, { $set: { expires_at: new Date(Date.now() - 1000) } });
    const models = async (key: string) => (await call(d.base, 'GET', '/v1/models', { token: key })).status;

    await page.reload();
    const row = page.locator('tr', { hasText: 'made by a script' });
    const secret = page.getByLabel('Full key made by a script');
    await row.getByRole('button', { name: 'Reveal made by a script' }).click();
    assert.equal(await secret.textContent(), scripted.api_key, 'a key made through the API, long after its creation');
    assert.equal(await models(scripted.api_key), 200);

    await row.getByRole('button', { name: 'Revoke made by a script' }).click();
    await row.getByRole('cell', { name: 'revoked', exact: true }).waitFor();
    assert.equal(await models(scripted.api_key), 401, 'refused from the next request on');
    assert.equal(await row.getByRole('button', { name: /^Revoke/ }).count(), 0);
    await row.getByRole('button', { name: 'Reveal made by a script' }).click();
    assert.equal(await secret.textContent(), scripted.api_key, 'a revoked key stays retrievable');

    await page.getByLabel('Status').selectOption('expired');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/\?status=expired$/);
    await page.getByRole('cell', { name: 'expired', exact: true }).waitFor();
    assert.deepEqual(await page.locator('tbody tr td:first-child').allTextContents(), ['soon expired']);
    await page.getByRole('button', { name: 'Reveal soon expired' }).click();
    const full = (await call(d.base, 'GET', `/portal/keys/${expiring.id}`, { token })).body.api_key as string;
    assert.equal(await page.getByLabel('Full key soon expired').textContent(), full, 'an expired key stays retrievable');
    assert.equal(await page.getByRole('button', { name: /^Revoke/ }).count(), 0);
    tab.assertClean();
    await tab.close();
  });

  it('searches over all keys, not the current page, and pages through them on the server; the filter is in the URL', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    await createKey(d.base, token, { name: 'needle in the haystack' }); // the oldest: on the last page
    for (let i = 0; i < 25; i++) await createKey(d.base, token, { name: `service ${String(i).padStart(2, '0')}` });

    await page.reload();
    const rows = page.locator('tbody tr');
    await page.getByRole('cell', { name: 'service 24', exact: true }).waitFor();
    assert.equal(await rows.count(), 20, 'one page of 20');
    assert.equal(await page.getByRole('cell', { name: 'needle in the haystack', exact: true }).count(), 0);
    await tab.screenshot('keys');

    await page.getByLabel('Search name or prefix').fill('NEEDLE');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('cell', { name: 'needle in the haystack', exact: true }).waitFor();
    assert.equal(await rows.count(), 1);
    assert.match(page.url(), /\?search=NEEDLE$/);
    await page.reload();
    await page.getByRole('cell', { name: 'needle in the haystack', exact: true }).waitFor();
    assert.equal(await rows.count(), 1, 'the URL keeps the filter');

    await page.goto(`${d.base}/dashboard/keys`);
    await page.getByRole('cell', { name: 'service 24', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByRole('cell', { name: 'needle in the haystack', exact: true }).waitFor();
    assert.equal(await rows.count(), 6, 'the second page holds the other 6');
    assert.match(page.url(), /\?after=/);
    await tab.checkA11y('keys: list');
    tab.assertClean();
    await tab.close();
  });

  it('finds a key the server reaches only after several budgeted search requests, following next_after until the list ends', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    await createKey(d.base, token, { name: 'template' });
    await copyKeys(d.gw.store, me, 25_000, { firstId: 1_000_000, name: 'bulk', now: Date.now() });
    // 'bulk 0' is the oldest of 25,000: the server's search walks at most 10,000 keys a request.
    const first = await call(d.base, 'GET', '/portal/keys?search=bulk%200&limit=20', { token });
    assert.equal(first.body.has_more, true);
    assert.ok(first.body.data.length < 20, 'the server cut its first page short');

    const requests: string[] = [];
    page.on('request', (r) => r.url().includes('/portal/keys?') && requests.push(r.url()));
    await page.goto(`${d.base}/dashboard/keys?search=bulk%200`);
    await page.getByRole('cell', { name: 'bulk 0', exact: true }).waitFor();
    assert.ok(requests.length >= 3, `the page followed next_after (${requests.length} requests)`);
    assert.deepEqual(await page.locator('tbody tr td:first-child').allTextContents(), ['bulk 0'], 'the only match, and no "No key matches." on the way');
    assert.equal(await page.getByRole('button', { name: 'Next page' }).count(), 0, 'the whole list was searched');
    tab.assertClean();
    await tab.close();
  });
});
