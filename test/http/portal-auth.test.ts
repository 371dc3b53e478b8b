// Accounts and portal sessions: sign-up, login, attempt limits, expiry, logout.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, signup, startTestGateway, type TestGateway } from '../helper.ts';

describe('portal accounts and sessions', () => {
  let gw: TestGateway;
  let clock = Date.now();
  before(async () => {
    gw = await startTestGateway(
      {
        auth: { argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, loginMaxFailuresPerAccount: 3, sessionTtlHours: 1, signupMaxPerAddressPerHour: 12 },
      },
      { now: () => clock },
    );
  });
  after(() => gw.destroy());

  it('signs up with the documented shape and integer ids; passwords are stored hashed (argon2id)', async () => {
    const res = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'Ana@Example.com', password: 'a long enough password' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(typeof res.body.user.id, 'number');
    assert.equal(res.body.user.email, 'ana@example.com');
    assert.match(res.body.session_token, /^sess_[A-Za-z0-9_-]{40,}$/);
    assert.ok(Date.parse(res.body.expires_at) > clock);
    const doc = await gw.store.collection('users').findOne({ _id: res.body.user.id });
    assert.match(String(doc!.password_hash), /^\$argon2id\$/);
    assert.ok(!JSON.stringify(doc).includes('a long enough password'));
    const sessions = await gw.store.collection('sessions').find({ user_id: res.body.user.id });
    assert.equal(sessions.length, 1);
    assert.notEqual(sessions[0]!._id, res.body.session_token, 'only a hash of the token is stored');
  });

  it('refuses a taken e-mail (409), a short password and a malformed e-mail (400)', async () => {
    const taken = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'ANA@example.com', password: 'another long password' } });
    assert.equal(taken.status, 409);
    assert.equal(taken.body.error.code, 'email_taken');
    const short = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'b@example.com', password: 'short' } });
    assert.equal(short.status, 400);
    assert.equal(short.body.error.param, 'password');
    const bad = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: 'not-an-email', password: 'a long enough password' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.param, 'email');
  });

  it('logs in, answers /portal/me, and refuses a wrong password with 401 invalid_credentials', async () => {
    const ok = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'ana@example.com', password: 'a long enough password' } });
    assert.equal(ok.status, 200, ok.text);
    const me = await call(gw.url, 'GET', '/portal/me', { token: ok.body.session_token });
    assert.equal(me.status, 200);
    assert.equal(me.body.user.email, 'ana@example.com');
    assert.equal(me.body.organization, null);
    const wrong = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'ana@example.com', password: 'wrong password!!' } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error.code, 'invalid_credentials');
    const unknown = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'nobody@example.com', password: 'wrong password!!' } });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.message, wrong.body.error.message, 'unknown and wrong look the same');
  });

  it('locks an account after repeated failures (429 with Retry-After), even for the right password', async () => {
    const s = await signup(gw.url, 'locked@example.com');
    assert.ok(s.id);
    for (let i = 0; i < 3; i++) {
      const r = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'locked@example.com', password: 'nope nope nope' } });
      assert.equal(r.status, 401);
    }
    const blocked = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'locked@example.com', password: 'correct horse battery' } });
    assert.equal(blocked.status, 429);
    assert.equal(blocked.body.error.code, 'rate_limit_exceeded');
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
    // Another account from the same address is not locked.
    const other = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'ana@example.com', password: 'a long enough password' } });
    assert.equal(other.status, 200);
    // The window passes: the right password works again.
    clock += 16 * 60_000;
    const later = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: 'locked@example.com', password: 'correct horse battery' } });
    assert.equal(later.status, 200);
  });

  it('rejects missing, malformed, expired and logged-out session tokens with 401 invalid_session', async () => {
    const s = await signup(gw.url);
    assert.equal((await call(gw.url, 'GET', '/portal/me')).body.error.code, 'invalid_session');
    assert.equal((await call(gw.url, 'GET', '/portal/me', { token: 'sess_forged' })).status, 401);
    assert.equal((await call(gw.url, 'GET', '/portal/me', { token: s.token })).status, 200);
    clock += 61 * 60_000; // sessionTtlHours: 1
    const expired = await call(gw.url, 'GET', '/portal/me', { token: s.token });
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error.code, 'invalid_session');

    const fresh = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: s.email, password: 'correct horse battery' } });
    const second = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: s.email, password: 'correct horse battery' } });
    const out = await call(gw.url, 'POST', '/portal/auth/logout', { token: fresh.body.session_token });
    assert.equal(out.status, 200);
    assert.equal(out.body.revoked_sessions, 1);
    assert.equal((await call(gw.url, 'GET', '/portal/me', { token: fresh.body.session_token })).status, 401);
    assert.equal((await call(gw.url, 'GET', '/portal/me', { token: second.body.session_token })).status, 200, 'other sessions live on');
    await call(gw.url, 'POST', '/portal/auth/logout', { token: second.body.session_token, body: { everywhere: true } });
    assert.equal((await call(gw.url, 'GET', '/portal/me', { token: second.body.session_token })).status, 401);
  });

  it('limits sign-ups per address (429 with Retry-After)', async () => {
    let last;
    for (let i = 0; i < 15; i++) {
      last = await call(gw.url, 'POST', '/portal/auth/signup', { body: { email: `flood${i}@example.com`, password: 'a long enough password' } });
      if (last.status === 429) break;
    }
    assert.equal(last!.status, 429);
    assert.equal(last!.body.error.code, 'rate_limit_exceeded');
    assert.ok(Number(last!.headers.get('retry-after')) > 0);
  });
});

describe('login attempts per address', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({
      auth: {
        argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 },
        signupMaxPerAddressPerHour: 1000,
        loginMaxFailuresPerAccount: 100,
        loginMaxFailuresPerAddress: 4,
      },
    });
  });
  after(() => gw.destroy());

  it('an address guessing across many accounts is refused (429), whatever account it tries next', async () => {
    const victims = await Promise.all([1, 2, 3, 4, 5].map(() => signup(gw.url)));
    for (const v of victims.slice(0, 4)) {
      const r = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: v.email, password: 'guess guess guess' } });
      assert.equal(r.status, 401);
    }
    const blocked = await call(gw.url, 'POST', '/portal/auth/login', { body: { email: victims[4]!.email, password: 'correct horse battery' } });
    assert.equal(blocked.status, 429, blocked.text);
    assert.equal(blocked.body.error.code, 'rate_limit_exceeded');
    assert.match(blocked.body.error.message, /address/);
    assert.ok(Number(blocked.headers.get('retry-after')) > 0);
  });
});
