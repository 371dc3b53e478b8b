// Cross-site requests in Chromium: a signed-in person visits another origin on loopback, which tries
// state-changing requests to the gateway with the person's cookie (fetch, with and without the
// dashboard's header, and a form POST). Two attackers: http://localhost:<p2> (another site: the
// SameSite=Strict cookie is not even sent) and http://127.0.0.1:<p2> (the same site on another port:
// the cookie is sent, and the gateway's Sec-Fetch-Site rule refuses it). Nothing changes, the session
// survives, nothing is read (an upload is refused, a recording embedded by <audio> is not served),
// and no page script can read the cookie.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { call } from '../helper.ts';
import { apiSession, openTab, signUpInBrowser, startDashboard, type Dashboard } from './browser.ts';

function attackerPage(gateway: string): string {
  return `<!doctype html><html><body><h1>Win a prize</h1><script>
const G = ${JSON.stringify(gateway)};
const out = {};
async function attempt(name, f) {
  try { const r = await f(); out[name] = r.type === 'opaque' ? 'opaque' : r.status; } catch (e) { out[name] = 'blocked'; }
}
(async () => {
  await attempt('create_text', () => fetch(G + '/portal/keys', { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: JSON.stringify({ name: 'evil' }) }));
  await attempt('create_json', () => fetch(G + '/portal/keys', { method: 'POST', credentials: 'include', headers: { 'content-type': 'application/json', 'x-gateway-client': 'dashboard' }, body: JSON.stringify({ name: 'evil' }) }));
  await attempt('logout', () => fetch(G + '/portal/auth/logout', { method: 'POST', mode: 'no-cors', credentials: 'include' }));
  await attempt('revoke', () => fetch(G + '/portal/keys/1', { method: 'DELETE', credentials: 'include', headers: { 'x-gateway-client': 'dashboard' } }));
  await attempt('read_keys', () => fetch(G + '/portal/keys', { credentials: 'include' }).then((r) => r.json()));
  // A multipart body is a simple request too: an upload that would be billed to the person.
  const form = new FormData();
  form.set('model', 'stt-local');
  form.set('file', new Blob([new Uint8Array(64)], { type: 'audio/wav' }), 'a.wav');
  await attempt('upload', () => fetch(G + '/portal/transcription/jobs', { method: 'POST', mode: 'no-cors', credentials: 'include', body: form }));
  // A recording embedded by an <audio> element needs no CORS at all.
  await new Promise((done) => {
    const a = document.createElement('audio');
    a.onerror = a.onloadedmetadata = done;
    a.src = G + '/portal/transcription/jobs/txjob_${'0'.repeat(24)}/audio';
    document.body.append(a);
  });
  window.results = { out, cookie: document.cookie };
})();
</script></body></html>`;
}

const formPage = (gateway: string) =>
  `<!doctype html><html><body onload="document.forms[0].submit()"><form method="post" action="${gateway}/portal/auth/logout" enctype="text/plain"></form></body></html>`;

describe('dashboard: cross-site requests', () => {
  let d: Dashboard;
  let attacker: Server;
  let port = 0;
  before(async () => {
    d = await startDashboard();
    attacker = createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(req.url === '/form' ? formPage(d.base) : attackerPage(d.base));
    });
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
    port = (attacker.address() as AddressInfo).port;
  });
  after(async () => {
    await new Promise((r) => attacker.close(r));
    await d.close();
  });

  for (const [label, host, sent] of [
    ['another site (localhost)', 'localhost', false],
    ['the same site on another port (127.0.0.1)', '127.0.0.1', true],
  ] as const) {
    it(`refuses state changes from ${label}; nothing changes and the session survives`, async () => {
      const tab = await openTab(d);
      const email = await signUpInBrowser(tab, d);
      const token = await apiSession(d, email);
      const keysBefore = (await call(d.base, 'GET', '/portal/keys', { token })).body.data.length;

      // What reached the gateway from the attacker's pages, as the browser saw it.
      const seen: { method: string; path: string; status: number }[] = [];
      const evil = await tab.context.newPage();
      evil.on('response', (res) => {
        if (res.url().startsWith(d.base)) seen.push({ method: res.request().method(), path: new URL(res.url()).pathname, status: res.status() });
      });
      await evil.goto(`http://${host}:${port}/`);
      const results = (await evil.waitForFunction('window.results', undefined, { timeout: 10_000 }).then((h) => h.jsonValue())) as {
        out: Record<string, unknown>;
        cookie: string;
      };
      assert.equal(results.cookie, '', 'no cookie of the gateway is visible there');
      assert.equal(results.out.create_json, 'blocked', 'the dashboard header needs a CORS preflight the gateway never grants');
      assert.equal(results.out.revoke, 'blocked');
      assert.equal(results.out.read_keys, 'blocked', 'nothing can be read cross-origin');
      assert.ok(!seen.some((s) => s.method === 'DELETE' || (s.method === 'POST' && s.status < 400)), `no write got through: ${JSON.stringify(seen)}`);
      // The simple requests did reach it: a text/plain body is refused before anything is read; the
      // body-less logout is refused for want of a session (the cookie was not sent) or as cross-site.
      assert.equal(seen.find((s) => s.path === '/portal/keys' && s.method === 'POST')?.status, 415);
      assert.equal(seen.find((s) => s.path === '/portal/auth/logout')?.status, sent ? 403 : 401);
      assert.equal(seen.find((s) => s.path === '/portal/transcription/jobs')?.status, sent ? 403 : 401, 'the upload: refused before its body is read');
      // The browser blocks the JSON refusal to the <audio> element (ORB), so the gateway's own count says what it answered.
      const metrics = (await call(d.gw.metricsUrl, 'GET', '/metrics')).text;
      const refused = new RegExp(
        `gateway_http_requests_total\\{method="GET",route="/portal/transcription/jobs/:id/audio",status="${sent ? 403 : 401}"\\} [1-9]`,
      );
      assert.match(metrics, refused, 'the embedded recording: refused before any job is looked up');

      // A form POST navigates the tab to the gateway's answer: a form's body is never JSON, so it is
      // refused before any credential is looked at.
      const formAnswer = evil.waitForResponse((r) => r.url() === `${d.base}/portal/auth/logout` && r.request().isNavigationRequest());
      await evil.goto(`http://${host}:${port}/form`);
      const answer = await formAnswer;
      const body = JSON.parse(await answer.text());
      assert.deepEqual([answer.status(), body.error.code], [415, 'unsupported_media_type']);

      // Nothing changed: no key was made, the session still works in the dashboard.
      assert.equal((await call(d.base, 'GET', '/portal/keys', { token })).body.data.length, keysBefore);
      await tab.page.goto(`${d.base}/dashboard/keys`);
      await tab.page.getByRole('heading', { name: 'API keys', exact: true }).waitFor();
      assert.equal(await tab.page.evaluate('document.cookie'), '');
      tab.assertClean();
      await tab.close();
    });
  }
});
