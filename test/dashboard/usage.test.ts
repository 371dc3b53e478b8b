// The usage page in Chromium: usage and spend over a UTC date range, grouped by day, model, key
// prefix, member and end user; the totals the page shows equal the API's for the same range, the
// day chart has one bar per UTC day of the range, and the range is kept in the URL.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, createKey } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';

const DAY = 86_400_000;

describe('dashboard: usage and spend', () => {
  let d: Dashboard;
  let up: FakeServer;
  let clock = Date.UTC(2026, 0, 9, 23, 30); // half an hour before a UTC midnight
  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up' });
    d = await startDashboard({ billing: { usageFlushIntervalMs: 20 } }, { now: () => clock });
    const r = await call(d.base, 'PUT', '/admin/models/chat-b', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 'test',
        context_window: 4096,
        max_output_tokens: 256,
        pricing: { input_cents_per_mtok: 150_000, output_cents_per_mtok: 600_000 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' }],
      },
    });
    assert.equal(r.status, 201, r.text);
  });
  after(async () => {
    await d.close();
    await up.close();
  });

  it('shows usage by day, model, key prefix and end user over UTC days, with the API totals for the same range', async () => {
    const tab = await openTab(d);
    const { page } = tab;
    const email = await signUpInBrowser(tab, d);
    const token = await apiSession(d, email);
    const me = (await call(d.base, 'GET', '/portal/me', { token })).body.user.id as number;
    assert.equal((await call(d.base, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: me, amount_cents: 10_000 } })).status, 201);
    const a = await createKey(d.base, token, { name: 'a' });
    const b = await createKey(d.base, token, { name: 'b' });
    const chat = async (key: string, user?: string) => {
      const r = await call(d.base, 'POST', '/v1/chat/completions', {
        token: key,
        body: { model: 'chat-b', messages: [{ role: 'user', content: 'tell me about rivers' }], max_tokens: 16, ...(user ? { user } : {}) },
      });
      assert.equal(r.status, 200, r.text);
    };
    await chat(b.api_key); // 2026-01-09 23:30 UTC: the day before the range below
    clock += DAY; // 2026-01-10 23:30 UTC
    await chat(a.api_key);
    await chat(a.api_key, 'end-1');
    clock += DAY; // 2026-01-11 23:30 UTC: another UTC day
    await chat(b.api_key, 'end-1');

    const range = 'from=2026-01-10&to=2026-01-15';
    let api: any;
    for (let i = 0; i < 100; i++) {
      const res = await call(d.base, 'GET', `/portal/usage?${range}&group_by=day`, { token });
      assert.equal(res.status, 200, res.text);
      api = res.body;
      if (api.totals.requests === 3) break;
      await sleep(20);
    }
    assert.equal(api.totals.requests, 3, 'the API counts the three calls in range');

    await page.goto(`${d.base}/dashboard/usage?${range}`);
    const totals = page.getByTestId('usage-totals');
    await totals.waitFor();
    assert.equal(await totals.locator('[data-metric="requests"]').textContent(), '3');
    assert.equal(await totals.locator('[data-metric="cost"]').getAttribute('data-microcents'), String(api.totals.cost_microcents));
    assert.equal(await totals.locator('[data-metric="tokens"]').textContent(), api.totals.total_tokens.toLocaleString('en-US'));
    const days = page.getByTestId('usage-table').locator('tbody tr');
    assert.deepEqual(await days.locator('th').allTextContents(), ['2026-01-10', '2026-01-11'], 'UTC days, as the API has them');
    assert.equal(await page.locator('svg.chart rect.bar').count(), 6, 'one bar per UTC day of the range');
    assert.equal(await page.getByLabel('From (UTC day)').inputValue(), '2026-01-10');
    // The request log: the range's three calls, newest first, as /portal/usage/records has them
    // (the call of the day before the range is in the API's whole log, not in the page's).
    assert.equal((await call(d.base, 'GET', '/portal/usage/records', { token })).body.data.length, 4);
    const records = (await call(d.base, 'GET', `/portal/usage/records?${range}`, { token })).body.data as { request_id: string }[];
    assert.equal(records.length, 3);
    const ids = async (q: string) =>
      ((await call(d.base, 'GET', `/portal/usage/records?${q}`, { token })).body.data as { request_id: string }[]).map((r) => r.request_id);
    assert.deepEqual(
      await ids('from=2026-01-11&to=2026-01-11'),
      records.slice(0, 1).map((r) => r.request_id),
    );
    assert.equal((await ids('to=2026-01-09')).length, 1, 'the day before the range');
    assert.deepEqual(
      await ids('from=2026-01-10&to=2026-01-10'),
      records.slice(1).map((r) => r.request_id),
    );
    // Paged one by one inside the range: the cursor and the range bound together.
    const walked: string[] = [];
    let next: string | null = null;
    do {
      const res: { body: { data: { request_id: string }[]; next_after: string | null } } = await call(
        d.base,
        'GET',
        `/portal/usage/records?${range}&limit=1${next ? `&after=${next}` : ''}`,
        { token },
      );
      walked.push(...res.body.data.map((r) => r.request_id));
      next = res.body.next_after;
    } while (next);
    assert.deepEqual(
      walked,
      records.map((r) => r.request_id),
    );
    const reversed = await call(d.base, 'GET', '/portal/usage/records?from=2026-01-12&to=2026-01-11', { token });
    assert.equal(reversed.status, 400);
    assert.equal(reversed.body.error.param, 'from');
    const logged = page.getByTestId('usage-records').locator('tbody tr');
    await logged.first().waitFor();
    assert.deepEqual(
      await logged.locator('td:last-child').allTextContents(),
      records.map((r) => r.request_id),
    );
    await tab.checkA11y('usage');
    await tab.screenshot('usage');

    for (const [group, labels] of [
      ['model', ['chat-b']],
      ['key_prefix', [a.prefix, b.prefix].sort()],
      ['end_user', ['end-1']],
      ['member', [`user ${me}`]],
    ] as const) {
      await page.getByLabel('Group by').selectOption(group);
      await page.getByRole('button', { name: 'Show' }).click();
      await page.waitForURL(new RegExp(`group_by=${group}`));
      const apiGroup = (await call(d.base, 'GET', `/portal/usage?${range}&group_by=${group}`, { token })).body;
      await page.getByTestId('usage-table').locator('tbody th', { hasText: labels[0] }).waitFor();
      assert.deepEqual((await page.getByTestId('usage-table').locator('tbody th').allTextContents()).sort(), [...labels].sort(), group);
      assert.equal(
        await totals.locator('[data-metric="cost"]').getAttribute('data-microcents'),
        String(apiGroup.totals.cost_microcents),
        `${group}: the API's totals`,
      );
      assert.equal(await totals.locator('[data-metric="requests"]').textContent(), String(apiGroup.totals.requests));
    }
    await page.reload();
    await page
      .getByTestId('usage-table')
      .locator('tbody th', { hasText: `user ${me}` })
      .waitFor();
    tab.assertClean();
    await tab.close();
  });
});
