// The other lists the dashboard pages through: webhook deliveries, the account's top-ups, the
// operators' top-ups and account lookup; and the role rules the dashboard shows, as the API enforces them.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, joinOrg, signup, startTestGateway, walkPages, type TestGateway } from '../helper.ts';

describe('dashboard lists', () => {
  let gw: TestGateway;
  let clock = Date.now();
  before(async () => {
    gw = await startTestGateway({}, { now: () => clock });
  });
  after(() => gw.destroy());

  /** Every page of `path`, following next_after: the ids in order. */
  const walk = async (path: string, token: string): Promise<string[]> =>
    (await walkPages<{ id: string | number }>(gw.url, path, token)).items.map((x) => String(x.id));

  const topup = async (body: Record<string, unknown>) => {
    const res = await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body });
    assert.equal(res.status, 201, res.text);
    return res.body.id as string;
  };

  it("pages a webhook's deliveries newest first; another account's webhook is 404", async () => {
    const u = await signup(gw.url);
    const hook = await call(gw.url, 'POST', '/portal/webhooks', { token: u.token, body: { url: 'https://hooks.example.com/in', events: ['topup'] } });
    assert.equal(hook.status, 201, hook.text);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const id = `${hook.body.id}:${(clock + i).toString(36).padStart(9, '0')}0000000${i}`;
      ids.push(id);
      await gw.store.collection('webhook_deliveries').insertOne({
        _id: id,
        webhook_id: hook.body.id,
        event_id: `evt_${i}`,
        event: 'topup',
        ts: new Date(clock + i),
        ok: i % 2 === 0,
        status_code: 200,
        error: null,
        latency_ms: 5,
      });
    }
    assert.deepEqual(await walk(`/portal/webhooks/${hook.body.id}/deliveries?limit=3`, u.token), [...ids].reverse());
    const first = await call(gw.url, 'GET', `/portal/webhooks/${hook.body.id}/deliveries`, { token: u.token });
    assert.equal(first.body.data.length, 7, 'default limit 50');
    assert.equal(first.body.has_more, false);
    const other = await signup(gw.url);
    assert.equal((await call(gw.url, 'GET', `/portal/webhooks/${hook.body.id}/deliveries`, { token: other.token })).status, 404);
    assert.equal((await call(gw.url, 'GET', `/portal/webhooks/${hook.body.id}/deliveries?after=x`, { token: u.token })).status, 400);
  });

  it("pages the account's top-ups newest first (ties by id); the organization's for its members", async () => {
    const owner = await signup(gw.url);
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push(await topup({ user_id: owner.id, amount_cents: 100 + i })); // one instant: ties
    clock += 1000;
    made.push(await topup({ user_id: owner.id, amount_cents: 999 }));
    const ids = await walk('/portal/wallet/topups?limit=2', owner.token);
    assert.equal(ids.length, 6);
    assert.equal(ids[0], made[5], 'newest first');
    assert.deepEqual(new Set(ids), new Set(made), 'every top-up once');
    assert.deepEqual(ids.slice(1), [...made.slice(0, 5)].sort().reverse(), 'same instant: by id, descending');
    const page = await call(gw.url, 'GET', '/portal/wallet/topups?limit=1', { token: owner.token });
    assert.deepEqual(Object.keys(page.body.data[0]).sort(), [
      'amount_cents',
      'created_at',
      'credited_at',
      'id',
      'kind',
      'new_balance_cents',
      'owner_id',
      'owner_type',
      'reference',
      'status',
      'user_id',
    ]);

    const stranger = await signup(gw.url);
    assert.deepEqual((await call(gw.url, 'GET', '/portal/wallet/topups', { token: stranger.token })).body, { data: [], has_more: false, next_after: null });
    const foreign = await call(gw.url, 'GET', `/portal/wallet/topups?after=${made[0]}`, { token: stranger.token });
    assert.equal(foreign.status, 400, "another account's top-up is no cursor");
    assert.equal(foreign.body.error.param, 'after');

    const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Acme' } });
    assert.equal(org.status, 201, org.text);
    const member = await signup(gw.url);
    await joinOrg(gw.url, owner.token, member);
    const orgTopup = await topup({ org_id: org.body.id, amount_cents: 50 });
    assert.deepEqual(await walk('/portal/wallet/topups?limit=5', member.token), [orgTopup], "a member sees the organization's top-ups, as its wallet");
  });

  it('operators page all top-ups or one account’s, and find an account by e-mail', async () => {
    const u = await signup(gw.url, 'Findable@Example.com');
    const a = await topup({ user_id: u.id, amount_cents: 1 });
    clock += 1000;
    const b = await topup({ user_id: u.id, amount_cents: 2 });
    assert.deepEqual(await walk(`/admin/topups?user_id=${u.id}&limit=1`, ADMIN_TOKEN), [b, a]);
    const all = await walk('/admin/topups?limit=100', ADMIN_TOKEN);
    assert.equal(all[0], b, 'the newest of everyone');
    assert.ok(all.includes(a));
    assert.equal((await call(gw.url, 'GET', `/admin/topups?user_id=${u.id}&org_id=1`, { token: ADMIN_TOKEN })).status, 400);

    const found = await call(gw.url, 'GET', '/admin/users?email=FINDABLE%40example.com', { token: ADMIN_TOKEN });
    assert.equal(found.status, 200, found.text);
    assert.deepEqual(found.body.data, [
      { id: u.id, email: 'findable@example.com', created_at: found.body.data[0].created_at, kyc_verified: false, organization: null },
    ]);
    assert.ok(!found.text.includes('argon2'), 'never the password hash');
    assert.deepEqual((await call(gw.url, 'GET', '/admin/users?email=nobody%40example.com', { token: ADMIN_TOKEN })).body, { data: [] });
    assert.equal((await call(gw.url, 'GET', '/admin/users?email=findable%40example.com', { token: u.token })).status, 401, 'a session is no admin token');
  });

  it('creates a key with its limits in one request, and shows the account’s KYC state with its wallet', async () => {
    const owner = await signup(gw.url);
    const key = await call(gw.url, 'POST', '/portal/keys', { token: owner.token, body: { name: 'limited', rpm: 5, cpd: 100, tpd: null } });
    assert.equal(key.status, 201, key.text);
    assert.deepEqual([key.body.rpm, key.body.tpd, key.body.cpd, key.body.cpm], [5, null, 100, null]);
    assert.equal((await call(gw.url, 'GET', `/portal/keys/${key.body.id}`, { token: owner.token })).body.rpm, 5);
    assert.equal((await call(gw.url, 'POST', '/portal/keys', { token: owner.token, body: { name: 'bad', rpm: 0 } })).status, 400);

    assert.equal((await call(gw.url, 'GET', '/portal/wallet', { token: owner.token })).body.kyc_verified, false);
    await call(gw.url, 'PUT', `/admin/users/${owner.id}/kyc`, { token: ADMIN_TOKEN, body: { verified: true } });
    assert.equal((await call(gw.url, 'GET', '/portal/wallet', { token: owner.token })).body.kyc_verified, true);
    await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Verified' } });
    const member = await signup(gw.url);
    await joinOrg(gw.url, owner.token, member);
    assert.equal((await call(gw.url, 'GET', '/portal/wallet', { token: member.token })).body.kyc_verified, true, "an organization's: its owner's");
  });

  it("operators page an account's keys (search, status) and find a key by its prefix, to set its limits", async () => {
    const u = await signup(gw.url);
    const a = await createKey(gw.url, u.token, { name: 'Alpha' });
    const b = await createKey(gw.url, u.token, { name: 'beta' });
    await call(gw.url, 'DELETE', `/portal/keys/${a.id}`, { token: u.token });
    assert.deepEqual(await walk(`/admin/keys?user_id=${u.id}&limit=1`, ADMIN_TOKEN), [String(b.id), String(a.id)]);
    assert.deepEqual(await walk(`/admin/keys?user_id=${u.id}&search=ALPHA`, ADMIN_TOKEN), [String(a.id)]);
    assert.deepEqual(await walk(`/admin/keys?user_id=${u.id}&status=active`, ADMIN_TOKEN), [String(b.id)]);
    const byPrefix = await call(gw.url, 'GET', `/admin/keys?prefix=${b.prefix}`, { token: ADMIN_TOKEN });
    assert.equal(byPrefix.status, 200, byPrefix.text);
    assert.deepEqual([byPrefix.body.data[0].id, byPrefix.body.data[0].user_id, byPrefix.body.has_more], [b.id, u.id, false]);
    assert.ok(!byPrefix.text.includes('api_key'), 'never the full key');
    assert.deepEqual((await call(gw.url, 'GET', '/admin/keys?prefix=sk-live-000000000000', { token: ADMIN_TOKEN })).body.data, []);
    // The prefix lookup takes no list parameter: one given with it is refused, not ignored.
    for (const q of [
      '',
      `user_id=${u.id}&prefix=${b.prefix}`,
      'prefix=sk-live-XYZ',
      `prefix=${b.prefix}&status=revoked`,
      `prefix=${b.prefix}&search=zzz`,
      `prefix=${b.prefix}&limit=5`,
      `prefix=${b.prefix}&after=1`,
    ]) {
      assert.equal((await call(gw.url, 'GET', `/admin/keys?${q}`, { token: ADMIN_TOKEN })).status, 400, q);
    }
    const limited = await call(gw.url, 'PATCH', `/admin/keys/${b.id}`, { token: ADMIN_TOKEN, body: { rpm: 3 } });
    assert.equal(limited.body.rpm, 3);
    assert.equal((await call(gw.url, 'GET', `/admin/keys?user_id=${u.id}&status=active`, { token: u.token })).status, 401, 'a session is no admin token');
  });

  it('a member calling an owner action gets the API’s 403 in the envelope, and nothing changes', async () => {
    const owner = await signup(gw.url);
    const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Roles' } });
    const member = await signup(gw.url);
    await joinOrg(gw.url, owner.token, member);
    const refused: [string, string, unknown][] = [
      ['PUT', '/portal/settings', { low_balance_threshold_cents: 7 }],
      ['POST', '/portal/webhooks', { url: 'https://hooks.example.com/x', events: ['topup'] }],
      ['POST', '/portal/org/members', { email: 'someone@example.com', role: 'member' }],
      ['DELETE', '/portal/org', undefined],
    ];
    for (const [method, path, body] of refused) {
      const res = await call(gw.url, method, path, { token: member.token, ...(body !== undefined ? { body } : {}) });
      assert.equal(res.status, 403, `${method} ${path}: ${res.text}`);
      assert.equal(res.body.error.code, 'role_forbidden');
      assert.equal(res.body.error.type, 'permission_error');
      assert.equal(typeof res.body.error.request_id, 'string');
    }
    const still = await call(gw.url, 'GET', '/portal/org', { token: owner.token });
    assert.equal(still.status, 200);
    assert.equal(still.body.id, org.body.id);
    assert.notEqual((await call(gw.url, 'GET', '/portal/wallet', { token: owner.token })).body.low_balance_threshold_cents, 7);
  });
});
