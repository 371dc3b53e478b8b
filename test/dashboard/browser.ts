// The browser test harness: Debian's Chromium (/usr/bin/chromium, nothing is downloaded) driven by
// playwright-core against a real gateway on loopback serving the dashboard build of the run (the
// runner builds it and launches the one Chromium that every dashboard test file connects to;
// test/build.ts). Each page a
// test opens fails the test on any script error, CSP violation or console error (an API's 4xx
// answer, which the page shows to the user as the error envelope, is the one console line allowed),
// is checked by axe-core (WCAG 2.1 A/AA), and can be photographed into docs/screenshots/
// (DASHBOARD_SCREENSHOTS=1; otherwise screenshots are taken into the temp dir and discarded).
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { DashboardBuild } from '../../scripts/build-dashboard.mjs';
import { dashboardBuild, RUN_BROWSER } from '../build.ts';
import { call, startTestGateway, type TestGateway } from '../helper.ts';
import { ROOT } from '../gateway-process.ts';

export const CHROMIUM = '/usr/bin/chromium';
export const PASSWORD = 'correct horse battery';
const SCREENSHOTS = join(ROOT, 'docs', 'screenshots');

export interface Dashboard {
  gw: TestGateway;
  browser: Browser;
  build: DashboardBuild;
  /** http://127.0.0.1:<port> */
  base: string;
  close(): Promise<void>;
}

/**
 * Starts a gateway serving the dashboard build and connects to the run's Chromium (or, outside the
 * runner, builds the dashboard into a temp dir and launches Chromium).
 */
export async function startDashboard(overrides: Record<string, unknown> = {}, opts: { now?: () => number } = {}): Promise<Dashboard> {
  const { build, dispose } = await dashboardBuild();
  const gw = await startTestGateway({ dashboardDir: build.outDir, ...overrides }, opts);
  const browser = RUN_BROWSER
    ? await chromium.connect(RUN_BROWSER)
    : await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-background-networking',
          '--disable-dev-shm-usage',
          '--use-fake-device-for-media-stream',
          '--use-fake-ui-for-media-stream',
        ],
      });
  return {
    gw,
    browser,
    build,
    base: gw.url,
    async close() {
      await browser.close(); // connected: closes this file's contexts and disconnects
      await gw.destroy();
      await dispose();
    },
  };
}

export interface Tab {
  page: Page;
  context: BrowserContext;
  /** Console errors, page errors and CSP violations seen so far. */
  problems: string[];
  /**
   * Every answer of status 400 or more and every request that failed, whatever its URL. `problems`
   * lets an API's 4xx pass (a page shows it as the envelope says); a test that expects none reads this.
   */
  failedRequests: string[];
  /** Fails the test when anything went wrong on the page so far. */
  assertClean(): void;
  /** Runs axe-core on the page as it is now; fails on any WCAG 2.1 A/AA violation. */
  checkA11y(label: string): Promise<void>;
  screenshot(name: string): Promise<void>;
  close(): Promise<void>;
}

const API_4XX = /^Failed to load resource: the server responded with a status of 4\d\d/;

let axeSource: Promise<string> | null = null;
const axe = () => (axeSource ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));

/** A new browser context (its own cookie jar: one signed-in person) with one page, watched. */
export async function openTab(d: Dashboard, opts: { clock?: boolean } = {}): Promise<Tab> {
  const context = await d.browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
  const problems: string[] = [];
  const failedRequests: string[] = [];
  await context.addInitScript(
    "document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + e.blockedURI));",
  );
  const page = await context.newPage();
  if (opts.clock) await page.clock.install();
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const url = msg.location().url ?? '';
    const path = url.startsWith(d.base) ? url.slice(d.base.length) : url;
    if (API_4XX.test(msg.text()) && /^\/(portal|admin)\//.test(path)) return; // an API refusal the page shows
    problems.push(`console error: ${msg.text()} (${url})`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400) failedRequests.push(`${res.status()} ${res.request().method()} ${res.url()}`);
  });
  page.on('requestfailed', (req) => {
    failedRequests.push(`failed ${req.method()} ${req.url()} ${req.failure()?.errorText ?? ''}`);
    // ERR_ABORTED: the page navigated away while the request was in flight (a reload, a goto).
    const why = req.failure()?.errorText ?? '';
    if (req.url().startsWith(d.base) && why !== 'net::ERR_ABORTED') problems.push(`request failed: ${req.url()} ${why}`);
  });
  return {
    page,
    context,
    problems,
    failedRequests,
    assertClean: () => assert.deepEqual(problems, [], 'the page logged errors'),
    async checkA11y(label) {
      await page.evaluate(await axe());
      const violations = (await page.evaluate(
        "axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }).then((r) => r.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')).slice(0, 5) })))",
      )) as unknown[];
      assert.deepEqual(violations, [], `axe-core found accessibility violations on ${label}`);
    },
    async screenshot(name) {
      const path = process.env.DASHBOARD_SCREENSHOTS === '1' ? join(SCREENSHOTS, `${name}.png`) : join(tmpdir(), `gw-dash-${process.pid}-${name}.png`);
      await page.screenshot({ path, fullPage: true });
      if (process.env.DASHBOARD_SCREENSHOTS !== '1') await rm(path, { force: true });
    },
    close: () => context.close(),
  };
}

let seq = 0;
export const freshEmail = (tag = 'user') => `${tag}${Date.now()}_${seq++}@example.com`;

/** Signs up through the sign-up page and waits for the keys page. */
export async function signUpInBrowser(tab: Tab, d: Dashboard, email = freshEmail()): Promise<string> {
  const { page } = tab;
  await page.goto(`${d.base}/dashboard/signup`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create an account' }).click();
  await page.getByRole('heading', { name: 'API keys', exact: true }).waitFor();
  return email;
}

export async function signInInBrowser(tab: Tab, d: Dashboard, email: string): Promise<void> {
  const { page } = tab;
  await page.goto(`${d.base}/dashboard/signin`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'API keys', exact: true }).waitFor();
}

/** A bearer session for the same account (an API client's login), to check what the API says. */
export async function apiSession(d: Dashboard, email: string): Promise<string> {
  const res = await call(d.base, 'POST', '/portal/auth/login', { body: { email, password: PASSWORD } });
  assert.equal(res.status, 200, res.text);
  return res.body.session_token as string;
}
