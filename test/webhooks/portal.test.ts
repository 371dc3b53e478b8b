// The portal's webhook endpoints: validation, ownership (user and organization roles), the secret
// shown only at creation, PATCH and DELETE, and the SSRF rules applied to the URL at creation.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call, joinOrg, signup, startTestGateway, type TestGateway } from '../helper.ts';

describe('portal webhooks', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway({ webhooks: { maxPerAccount: 3 } });
  });
  after(async () => gw.destroy());

  const post = (token: string, body: unknown) => call(gw.url, 'POST', '/portal/webhooks', { token, body });

  it('creates with {id, url, events, secret}; lists and shows without the secret; PATCH; DELETE', async () => {
    const u = await signup(gw.url);
    const created = await post(u.token, { url: 'https://hooks.example.com/in', events: ['topup', 'low_balance', 'topup'] });
    assert.equal(created.status, 201, created.text);
    assert.equal(typeof created.body.id, 'number');
    assert.match(created.body.secret, /^whsec_[A-Za-z0-9_-]{40,}$/);
    assert.deepEqual(created.body.events, ['topup', 'low_balance']);
    assert.deepEqual(
      [created.body.status, created.body.consecutive_failures, created.body.last_delivery_at, created.body.disabled_at],
      ['enabled', 0, null, null],
    );

    const list = await call(gw.url, 'GET', '/portal/webhooks', { token: u.token });
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 1);
    assert.deepEqual(Object.keys(list.body.data[0]).sort(), [
      'consecutive_failures',
      'created_at',
      'disabled_at',
      'events',
      'id',
      'last_delivery_at',
      'status',
      'url',
    ]);
    assert.ok(!list.text.includes(created.body.secret));
    const one = await call(gw.url, 'GET', `/portal/webhooks/${created.body.id}`, { token: u.token });
    assert.equal(one.body.url, 'https://hooks.example.com/in');
    assert.ok(!one.text.includes(created.body.secret));

    const patched = await call(gw.url, 'PATCH', `/portal/webhooks/${created.body.id}`, {
      token: u.token,
      body: { url: 'https://other.example.com/x', events: ['usage_spike'] },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual([patched.body.url, patched.body.events], ['https://other.example.com/x', ['usage_spike']]);

    const deleted = await call(gw.url, 'DELETE', `/portal/webhooks/${created.body.id}`, { token: u.token });
    assert.deepEqual(deleted.body, { id: created.body.id, deleted: true });
    assert.equal((await call(gw.url, 'GET', `/portal/webhooks/${created.body.id}`, { token: u.token })).status, 404);
    assert.equal((await call(gw.url, 'GET', '/portal/webhooks', { token: u.token })).body.data.length, 0);
  });

  it('400 for unknown events, no events, malformed URLs, unknown fields, and past the per-account limit', async () => {
    const u = await signup(gw.url);
    for (const body of [
      { url: 'https://a.example.com', events: ['nope'] },
      { url: 'https://a.example.com', events: ['ping'] },
      { url: 'https://a.example.com', events: [] },
      { url: 'not a url', events: ['topup'] },
      { url: 'https://user:pw@a.example.com', events: ['topup'] },
      { url: 'ftp://a.example.com', events: ['topup'] },
      { url: 'https://a.example.com', events: ['topup'], secret: 'mine' },
      { url: 'https://a.example.com' },
    ]) {
      const res = await post(u.token, body);
      assert.equal(res.status, 400, JSON.stringify(body) + res.text);
    }
    for (let i = 0; i < 3; i++) assert.equal((await post(u.token, { url: `https://a${i}.example.com`, events: ['topup'] })).status, 201);
    const over = await post(u.token, { url: 'https://a9.example.com', events: ['topup'] });
    assert.equal(over.status, 400);
    assert.match(over.body.error.message, /at most 3/);
  });

  it('another account’s webhook is 404 for every operation; no session is 401', async () => {
    const a = await signup(gw.url);
    const b = await signup(gw.url);
    const hook = (await post(a.token, { url: 'https://a.example.com', events: ['topup'] })).body;
    for (const [method, path] of [
      ['GET', `/portal/webhooks/${hook.id}`],
      ['PATCH', `/portal/webhooks/${hook.id}`],
      ['DELETE', `/portal/webhooks/${hook.id}`],
      ['POST', `/portal/webhooks/${hook.id}/enable`],
      ['POST', `/portal/webhooks/${hook.id}/test`],
      ['GET', `/portal/webhooks/${hook.id}/deliveries`],
    ] as const) {
      const res = await call(gw.url, method, path, { token: b.token, ...(method === 'PATCH' ? { body: { events: ['topup'] } } : {}) });
      assert.equal(res.status, 404, `${method} ${path}`);
    }
    assert.equal((await call(gw.url, 'GET', '/portal/webhooks')).status, 401);
  });

  it('organization webhooks: the owner and admins manage them, members get 403, and they are the org’s', async () => {
    const owner = await signup(gw.url);
    const admin = await signup(gw.url);
    const member = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Acme' } })).status, 201);
    await joinOrg(gw.url, owner.token, admin, 'admin');
    await joinOrg(gw.url, owner.token, member);
    const byAdmin = await post(admin.token, { url: 'https://org.example.com', events: ['low_balance'] });
    assert.equal(byAdmin.status, 201);
    const seenByOwner = await call(gw.url, 'GET', '/portal/webhooks', { token: owner.token });
    assert.deepEqual(
      seenByOwner.body.data.map((w: { id: number }) => w.id),
      [byAdmin.body.id],
    );
    assert.equal((await post(member.token, { url: 'https://m.example.com', events: ['topup'] })).status, 403);
    assert.equal((await call(gw.url, 'GET', '/portal/webhooks', { token: member.token })).status, 403);
    assert.equal((await call(gw.url, 'DELETE', `/portal/webhooks/${byAdmin.body.id}`, { token: member.token })).status, 403);
    assert.equal((await call(gw.url, 'DELETE', `/portal/webhooks/${byAdmin.body.id}`, { token: owner.token })).status, 200);
  });

  it('with the switch off, URLs naming private, loopback, link-local or metadata addresses are refused (every spelling), and http is refused', async () => {
    const u = await signup(gw.url);
    for (const url of [
      'https://127.0.0.1/h',
      'https://2130706433/h',
      'https://0x7f000001/h',
      'https://0177.0.0.1/h',
      'https://127.1/h',
      'https://[::1]/h',
      'https://[::ffff:127.0.0.1]/h',
      'https://[::ffff:7f00:1]/h',
      'https://10.0.0.1/h',
      'https://192.168.1.1/h',
      'https://169.254.169.254/latest/meta-data',
      'https://[fd00:ec2::254]/h',
      'https://100.100.100.200/h',
      'https://0.0.0.0/h',
      'https://localhost/h',
      'http://hooks.example.com/h',
    ]) {
      const res = await post(u.token, { url, events: ['topup'] });
      assert.equal(res.status, 400, url);
      assert.equal(res.body.error.param, 'url', url);
    }
  });
});
