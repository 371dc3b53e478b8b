// The dashboard's browser sessions: the __Host- cookies, the cross-site rule, logout, the operator
// session, and no-store on every /portal and /admin answer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, signup, startTestGateway, type TestGateway } from '../helper.ts';

const PASSWORD = 'correct horse battery';
/** What the dashboard's own pages send on a state-changing fetch. */
const SAME_ORIGIN = { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'same-origin' };

interface Injected {
  status: number;
  body: any;
  headers: Record<string, unknown>;
  setCookie: string | undefined;
}

describe('dashboard browser sessions', () => {
  let gw: TestGateway;
  let clock = Date.now();

  before(async () => {
    gw = await startTestGateway(
      { auth: { argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, sessionTtlHours: 2, signupMaxPerAddressPerHour: 1000 } },
      { now: () => clock },
    );
  });
  after(() => gw.destroy());

  async function req(method: string, url: string, opts: { headers?: Record<string, string>; body?: unknown; cookie?: string } = {}): Promise<Injected> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.cookie) headers.cookie = opts.cookie;
    const res = await gw.app.inject({ method: method as 'GET', url, headers, ...(opts.body !== undefined ? { payload: opts.body as object } : {}) });
    const sc = res.headers['set-cookie'];
    return { status: res.statusCode, body: res.body ? res.json() : null, headers: res.headers, setCookie: Array.isArray(sc) ? sc.join('\n') : sc };
  }

  /** Signs up through the dashboard and returns the cookie pair to send back. */
  async function dashboardUser(): Promise<{ cookie: string; email: string; id: number }> {
    const email = `dash${Math.random().toString(36).slice(2)}@example.com`;
    const res = await req('POST', '/portal/auth/signup', { headers: SAME_ORIGIN, body: { email, password: PASSWORD } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return { cookie: res.setCookie!.split(';')[0]!, email, id: res.body.user.id };
  }

  const keyCount = async (userId: number) => gw.store.collection('api_keys').countDocuments({ user_id: userId });

  it('dashboard sign-in sets the session cookie with exact attributes and leaves the token out of the body', async () => {
    const email = 'cookie@example.com';
    const up = await req('POST', '/portal/auth/signup', { headers: SAME_ORIGIN, body: { email, password: PASSWORD } });
    assert.equal(up.status, 201);
    assert.equal(up.body.session_token, undefined);
    assert.deepEqual(Object.keys(up.body).sort(), ['expires_at', 'user']);
    assert.match(up.setCookie!, /^__Host-gw_session=sess_[A-Za-z0-9_-]{40,}; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=7200$/);

    const login = await req('POST', '/portal/auth/login', { headers: SAME_ORIGIN, body: { email, password: PASSWORD } });
    assert.equal(login.status, 200);
    assert.equal(login.body.session_token, undefined);
    assert.ok(!JSON.stringify(login.body).includes('sess_'), 'no token anywhere in the body');
    assert.match(login.setCookie!, /^__Host-gw_session=sess_[A-Za-z0-9_-]{40,}; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=7200$/);

    const me = await req('GET', '/portal/me', { cookie: login.setCookie!.split(';')[0]! });
    assert.equal(me.status, 200);
    assert.equal(me.body.user.email, email);
  });

  it('API clients are unchanged: the token in the body, no cookie', async () => {
    const res = await req('POST', '/portal/auth/login', { body: { email: 'cookie@example.com', password: PASSWORD } });
    assert.equal(res.status, 200);
    assert.match(res.body.session_token, /^sess_/);
    assert.equal(res.setCookie, undefined);
  });

  it('a cross-site dashboard sign-in is refused (no login CSRF)', async () => {
    const res = await req('POST', '/portal/auth/login', {
      headers: { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'cross-site' },
      body: { email: 'cookie@example.com', password: PASSWORD },
    });
    assert.equal(res.status, 403);
    assert.equal(res.body.error.code, 'cross_site_request');
    assert.equal(res.setCookie, undefined);
  });

  it('the cookie is ignored when an Authorization header is present', async () => {
    const a = await dashboardUser();
    const b = await signup(gw.url);
    const asB = await req('GET', '/portal/me', { cookie: a.cookie, headers: { authorization: `Bearer ${b.token}` } });
    assert.equal(asB.status, 200);
    assert.equal(asB.body.user.id, b.id, 'the bearer token wins');
    const bad = await req('GET', '/portal/me', { cookie: a.cookie, headers: { authorization: 'Bearer sess_forged' } });
    assert.equal(bad.status, 401);
    assert.equal(bad.body.error.code, 'invalid_session');
    const malformed = await req('GET', '/portal/me', { cookie: a.cookie, headers: { authorization: 'Basic Zm9vOmJhcg==' } });
    assert.equal(malformed.status, 401, 'a malformed header is refused, never replaced by the cookie');
  });

  it('a state-changing request with the cookie needs the dashboard header and the same origin (403 cross_site_request, nothing changed)', async () => {
    const u = await dashboardUser();
    const body = { name: 'k' };
    const refused: Record<string, string>[] = [
      { 'sec-fetch-site': 'same-origin' }, // no X-Gateway-Client
      { 'x-gateway-client': 'other', 'sec-fetch-site': 'same-origin' },
      { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'cross-site' },
      { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'same-site' },
      { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'none' },
      { 'x-gateway-client': 'dashboard', origin: 'http://evil.example' },
      { 'x-gateway-client': 'dashboard', origin: 'null' },
      { 'x-gateway-client': 'dashboard' }, // neither Sec-Fetch-Site nor Origin
      { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'cross-site', origin: 'http://localhost:80' },
    ];
    for (const headers of refused) {
      const res = await req('POST', '/portal/keys', { cookie: u.cookie, headers, body });
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.equal(res.body.error.code, 'cross_site_request');
      assert.equal(res.body.error.type, 'permission_error');
    }
    assert.equal(await keyCount(u.id), 0, 'no refused request created a key');

    const ok = await req('POST', '/portal/keys', { cookie: u.cookie, headers: SAME_ORIGIN, body });
    assert.equal(ok.status, 201);
    const byOrigin = await req('POST', '/portal/keys', { cookie: u.cookie, headers: { 'x-gateway-client': 'dashboard', origin: 'http://localhost:80' }, body });
    assert.equal(byOrigin.status, 201, 'without Sec-Fetch-Site, a matching Origin is enough');

    const revoke = await req('DELETE', `/portal/keys/${ok.body.id}`, {
      cookie: u.cookie,
      headers: { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'cross-site' },
    });
    assert.equal(revoke.status, 403);
    const put = await req('PUT', '/portal/settings', {
      cookie: u.cookie,
      headers: { 'sec-fetch-site': 'same-origin' },
      body: { low_balance_threshold_cents: 5 },
    });
    assert.equal(put.status, 403);
    const list = await req('GET', '/portal/keys', { cookie: u.cookie, headers: { 'sec-fetch-site': 'cross-site' } });
    assert.equal(list.status, 200, 'reads never change state');
    assert.ok(
      list.body.data.every((k: { status: string }) => k.status === 'active'),
      'the cross-site DELETE revoked nothing',
    );
  });

  it('bearer-token clients need none of the dashboard headers', async () => {
    const s = await signup(gw.url);
    const res = await req('POST', '/portal/keys', { headers: { authorization: `Bearer ${s.token}`, origin: 'http://evil.example' }, body: { name: 'api' } });
    assert.equal(res.status, 201);
  });

  it('logout clears the cookie and ends the server session; a cross-site logout changes nothing', async () => {
    const u = await dashboardUser();
    const csrf = await req('POST', '/portal/auth/logout', { cookie: u.cookie, headers: { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'cross-site' } });
    assert.equal(csrf.status, 403);
    assert.equal(csrf.setCookie, undefined);
    assert.equal((await req('GET', '/portal/me', { cookie: u.cookie })).status, 200);

    const out = await req('POST', '/portal/auth/logout', { cookie: u.cookie, headers: SAME_ORIGIN });
    assert.equal(out.status, 200);
    assert.equal(out.body.revoked_sessions, 1);
    assert.equal(out.setCookie, '__Host-gw_session=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0');
    const after = await req('GET', '/portal/me', { cookie: u.cookie });
    assert.equal(after.status, 401, 'the server session is gone, not only the cookie');

    const again = await req('POST', '/portal/auth/logout', { cookie: u.cookie, headers: SAME_ORIGIN });
    assert.equal(again.status, 401);
    assert.match(again.setCookie ?? '', /Max-Age=0/, 'a stale cookie is cleared too');
  });

  it('logout everywhere ends API sessions of the account too', async () => {
    const u = await dashboardUser();
    const api = await req('POST', '/portal/auth/login', { body: { email: u.email, password: PASSWORD } });
    const out = await req('POST', '/portal/auth/logout', { cookie: u.cookie, headers: SAME_ORIGIN, body: { everywhere: true } });
    assert.equal(out.body.revoked_sessions, 2);
    assert.equal((await req('GET', '/portal/me', { headers: { authorization: `Bearer ${api.body.session_token}` } })).status, 401);
  });

  it('GET /portal/session answers 200 whether or not the request is signed in; /portal/me keeps its 401', async () => {
    const u = await dashboardUser();
    const signedIn = await req('GET', '/portal/session', { cookie: u.cookie });
    assert.equal(signedIn.status, 200);
    assert.deepEqual(signedIn.body, { signed_in: true, ...(await req('GET', '/portal/me', { cookie: u.cookie })).body });
    assert.equal(signedIn.body.user.email, u.email);
    assert.equal(signedIn.body.organization, null);
    assert.equal(signedIn.headers['cache-control'], 'no-store');
    const b = await signup(gw.url);
    assert.equal(
      (await req('GET', '/portal/session', { cookie: u.cookie, headers: { authorization: `Bearer ${b.token}` } })).body.user.id,
      b.id,
      'the bearer token wins',
    );
    for (const opts of [
      {},
      { cookie: '__Host-gw_session=sess_forged' },
      { headers: { authorization: 'Bearer sess_forged' } },
      { cookie: u.cookie, headers: { authorization: 'Basic Zm9vOmJhcg==' } },
    ]) {
      const res = await req('GET', '/portal/session', opts);
      assert.equal(res.status, 200, JSON.stringify(opts));
      assert.deepEqual(res.body, { signed_in: false });
      assert.equal(res.setCookie, undefined);
    }
    await req('POST', '/portal/auth/logout', { cookie: u.cookie, headers: SAME_ORIGIN });
    assert.deepEqual((await req('GET', '/portal/session', { cookie: u.cookie })).body, { signed_in: false }, 'an ended session');
    assert.equal((await req('GET', '/portal/me', { cookie: u.cookie })).status, 401, 'API clients still get the 401');
  });

  it('the cookie session expires with the session ttl', async () => {
    const u = await dashboardUser();
    clock += 2 * 3_600_000 + 1000;
    const res = await req('GET', '/portal/me', { cookie: u.cookie });
    assert.equal(res.status, 401);
    assert.equal(res.body.error.code, 'invalid_session');
  });

  it('operator session: the admin token exchanged for a 15-minute cookie, accepted by /admin, ended by DELETE or expiry', async () => {
    const noHeader = await req('POST', '/admin/session', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    assert.equal(noHeader.status, 400);
    assert.equal(noHeader.setCookie, undefined);
    const wrong = await req('POST', '/admin/session', { headers: { authorization: 'Bearer nope', 'x-gateway-client': 'dashboard' } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.setCookie, undefined);

    const open = await req('POST', '/admin/session', { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-gateway-client': 'dashboard' } });
    assert.equal(open.status, 200, JSON.stringify(open.body));
    assert.deepEqual(Object.keys(open.body), ['expires_at']);
    assert.equal(Date.parse(open.body.expires_at), clock + 900_000);
    assert.match(open.setCookie!, /^__Host-gw_admin=op_[A-Za-z0-9_-]{40,}; Path=\/; HttpOnly; Secure; SameSite=Strict; Max-Age=900$/);
    assert.ok(!open.setCookie!.includes(ADMIN_TOKEN) && !JSON.stringify(open.body).includes(ADMIN_TOKEN), 'the token is never echoed');
    const stored = await gw.store.collection('operator_sessions').find({});
    assert.ok(
      !JSON.stringify(stored).includes(ADMIN_TOKEN) && !JSON.stringify(stored).includes(open.setCookie!.split(';')[0]!.split('=')[1]!),
      'only hashes are stored',
    );
    const cookie = open.setCookie!.split(';')[0]!;

    assert.equal((await req('GET', '/admin/session', { cookie })).status, 200);
    assert.equal((await req('GET', '/admin/session', { cookie })).body.expires_at, open.body.expires_at);
    assert.equal((await req('GET', '/admin/models', { cookie })).status, 200);
    const extend = await req('POST', '/admin/session', { cookie, headers: SAME_ORIGIN });
    assert.equal(extend.status, 401, 'a session cannot open another: only the token can');

    const u = await dashboardUser();
    await req('POST', '/portal/keys', { cookie: u.cookie, headers: SAME_ORIGIN, body: { name: 'limited' } });
    const key = (await gw.store.collection('api_keys').findOne({ user_id: u.id }))!;
    const cross = await req('PATCH', `/admin/keys/${key._id}`, {
      cookie,
      headers: { 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'cross-site' },
      body: { rpm: 5 },
    });
    assert.equal(cross.status, 403);
    assert.equal(cross.body.error.code, 'cross_site_request');
    assert.equal((await gw.store.collection('api_keys').findOne({ _id: key._id }))!.admin_rpm, null);
    const patched = await req('PATCH', `/admin/keys/${key._id}`, { cookie, headers: SAME_ORIGIN, body: { rpm: 5 } });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.rpm, 5);

    const wrongBearer = await req('GET', '/admin/models', { cookie, headers: { authorization: 'Bearer wrong' } });
    assert.equal(wrongBearer.status, 401, 'the cookie is ignored beside an Authorization header');

    clock += 901_000;
    const expired = await req('GET', '/admin/models', { cookie });
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error.code, 'invalid_admin_token');
    assert.equal((await req('GET', '/admin/session', { cookie })).status, 401);

    const second = await req('POST', '/admin/session', { headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'x-gateway-client': 'dashboard' } });
    const cookie2 = second.setCookie!.split(';')[0]!;
    const crossEnd = await req('DELETE', '/admin/session', { cookie: cookie2, headers: { 'x-gateway-client': 'dashboard', origin: 'http://evil.example' } });
    assert.equal(crossEnd.status, 403);
    assert.equal((await req('GET', '/admin/session', { cookie: cookie2 })).status, 200);
    const end = await req('DELETE', '/admin/session', { cookie: cookie2, headers: SAME_ORIGIN });
    assert.equal(end.status, 200);
    assert.equal(end.body.revoked, true);
    assert.equal(end.setCookie, '__Host-gw_admin=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0');
    assert.equal((await req('GET', '/admin/models', { cookie: cookie2 })).status, 401, 'revoked on the server');
  });

  it('answers Cache-Control: no-store on every /portal and /admin answer, errors included', async () => {
    const u = await dashboardUser();
    for (const [method, url, opts] of [
      ['GET', '/portal/me', { cookie: u.cookie }],
      ['GET', '/portal/me', {}],
      ['GET', '/portal/nope', {}],
      ['POST', '/portal/auth/login', { body: { email: u.email, password: PASSWORD } }],
      ['GET', '/admin/models', { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }],
      ['GET', '/admin/session', {}],
      ['GET', '/admin/models', {}],
    ] as const) {
      const res = await req(method, url, opts);
      assert.equal(res.headers['cache-control'], 'no-store', `${method} ${url} ${res.status}`);
    }
    assert.equal((await req('GET', '/healthz')).headers['cache-control'], undefined);
  });
});

describe('operator session without an admin token configured', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ adminToken: undefined });
  });
  after(() => gw.destroy());

  it('refuses with admin_disabled, cookie or not', async () => {
    const res = await gw.app.inject({ method: 'GET', url: '/admin/models', headers: { cookie: '__Host-gw_admin=op_whatever' } });
    assert.equal(res.statusCode, 403);
    assert.equal(res.json().error.code, 'admin_disabled');
    const session = await gw.app.inject({ method: 'GET', url: '/admin/session' });
    assert.equal(session.json().error.code, 'admin_disabled');
  });
});

describe('the cross-site rule over a real socket', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.destroy());

  it('compares Origin with the listening address the browser used, port included', async () => {
    const email = `sock${Date.now()}@example.com`;
    const headers = { 'content-type': 'application/json', 'x-gateway-client': 'dashboard' };
    const up = await fetch(`${gw.url}/portal/auth/signup`, {
      method: 'POST',
      headers: { ...headers, origin: gw.url },
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    assert.equal(up.status, 201);
    const cookie = up.headers.getSetCookie()[0]!.split(';')[0]!;
    const otherPort = new URL(gw.url);
    otherPort.port = String(Number(otherPort.port) + 1);
    const foreign = await fetch(`${gw.url}/portal/keys`, {
      method: 'POST',
      headers: { ...headers, cookie, origin: otherPort.origin },
      body: JSON.stringify({ name: 'x' }),
    });
    assert.equal(foreign.status, 403, 'another port on the same host is another origin');
    const own = await fetch(`${gw.url}/portal/keys`, { method: 'POST', headers: { ...headers, cookie, origin: gw.url }, body: JSON.stringify({ name: 'x' }) });
    assert.equal(own.status, 201);
  });
});
