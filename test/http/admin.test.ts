// The operator API: guarded by ADMIN_TOKEN, disabled without it, and the actor inspection view.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, createKey, signup, startTestGateway, type TestGateway } from '../helper.ts';
import { probeKind } from '../actors/helpers.ts';

describe('admin API', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
    gw.runtime.register(probeKind(async ({ actorId }) => `worked:${actorId}`));
  });
  after(() => gw.destroy());

  it("shows an actor's state, context and revision", async () => {
    await gw.runtime.spawn('probe', 'a1', { actorId: 'a1' });
    await gw.runtime.send('probe', 'a1', { type: 'note', seq: 7 });
    const res = await call(gw.url, 'GET', '/admin/actors/probe/a1', { token: ADMIN_TOKEN });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.kind, 'probe');
    assert.equal(res.body.id, 'a1');
    assert.equal(res.body.value, 'idle');
    assert.equal(res.body.status, 'active');
    assert.deepEqual(res.body.context.notes, [7]);
    assert.equal(typeof res.body.revision, 'number');
    assert.ok(res.body.revision >= 2);
    assert.equal(res.body.version, 2);

    await gw.runtime.send('probe', 'a1', { type: 'start', now: Date.now(), timeoutMs: 60_000 });
    // The injected work resolves at once; the actor finishes.
    for (let i = 0; i < 50; i++) {
      const v = await call(gw.url, 'GET', '/admin/actors/probe/a1', { token: ADMIN_TOKEN });
      if (v.body.status === 'done') {
        assert.equal(v.body.value, 'done');
        assert.equal(v.body.context.result, 'worked:a1');
        return;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail('actor did not finish');
  });

  it('inspects the actors the product runs, e.g. an intent session (kind names may hold a hyphen)', async () => {
    const s = await signup(gw.url);
    await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: s.id, amount_cents: 100 } });
    const k = await createKey(gw.url, s.token);
    const turn = await call(gw.url, 'POST', '/v1/understand', {
      token: k.api_key,
      body: { model: 'intent-demo', session_id: 'ops-1', text: 'ATM se paise nahi nikle par account se kat gaye' },
    });
    assert.equal(turn.status, 200, turn.text);
    const res = await call(gw.url, 'GET', `/admin/actors/intent-session/${encodeURIComponent(`${k.id}:ops-1`)}`, { token: ADMIN_TOKEN });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.kind, 'intent-session');
    assert.ok(res.body.revision >= 1);
    assert.equal(typeof res.body.context, 'object');
  });

  it('unknown actors → 404; bad kinds → 400; wrong or missing token → 401', async () => {
    assert.equal((await call(gw.url, 'GET', '/admin/actors/probe/nope', { token: ADMIN_TOKEN })).status, 404);
    assert.equal((await call(gw.url, 'GET', '/admin/actors/Bad.Kind/x', { token: ADMIN_TOKEN })).status, 400);
    const none = await call(gw.url, 'GET', '/admin/actors/probe/a1');
    assert.equal(none.status, 401);
    assert.equal(none.body.error.code, 'invalid_admin_token');
    assert.equal((await call(gw.url, 'GET', '/admin/actors/probe/a1', { token: ADMIN_TOKEN + 'x' })).status, 401);
  });

  it('is disabled (403 admin_disabled) when ADMIN_TOKEN is not set', async () => {
    const plain = await startTestGateway({ adminToken: undefined });
    try {
      const res = await call(plain.url, 'GET', '/admin/actors/probe/a1', { token: 'anything-at-all-long' });
      assert.equal(res.status, 403);
      assert.equal(res.body.error.code, 'admin_disabled');
    } finally {
      await plain.destroy();
    }
  });
});
