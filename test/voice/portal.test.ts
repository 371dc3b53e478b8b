// The dashboard's voice call routes under /portal: the session reads the very calls, lists (cursor
// and filters) and answers that /v1 gives the account's keys, byte for byte; hangs up and cancels
// them as /v1 does; another account's call is 404; an organization's members see its calls; a
// cookie-signed control from another page is refused before the call is touched.
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, joinOrg, type TestGateway } from '../helper.ts';
import { ended, voiceAccount, waitForCall, type VoiceAccount } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';

const COOKIE = '__Host-gw_session';

describe('the dashboard’s voice call routes', () => {
  const v = simulatedVoice();
  let gw: TestGateway;
  let acc: VoiceAccount;
  before(() => {
    ({ gw, acc } = v);
  });
  const v1 = (path: string, key = acc.key) => call(gw.url, 'GET', `/v1/voice/calls${path}`, { token: key });
  const portal = (path: string, session = acc.session) => call(gw.url, 'GET', `/portal/voice/calls${path}`, { token: session });

  it('answers a call and the list as /v1 does, with the same cursor and filters; another account gets 404', async () => {
    v.stt.say('wait I have a question about my card');
    const barged = await v.dial('+919800000011');
    const busy = await v.dial('+919800000002');
    assert.deepEqual([barged.status, busy.status], [202, 202], barged.text);
    const c = await waitForCall(gw, acc.key, barged.body.id, ended, 30_000);
    await waitForCall(gw, acc.key, busy.body.id, ended);
    assert.equal(c.status, 'completed', JSON.stringify(c));
    assert.ok(
      c.transcript.some((t: { interrupted?: boolean; heard_text?: string; text: string }) => t.interrupted && t.heard_text!.length < t.text.length),
      'a turn cut short, with what was heard',
    );

    const one = await portal(`/${c.id}`);
    assert.equal(one.status, 200, one.text);
    assert.deepEqual(one.body, (await v1(`/${c.id}`)).body);
    assert.equal(one.body.cost_cents, c.cost_cents);

    const first = (await v1('?limit=1')).body;
    assert.equal(first.has_more, true);
    for (const q of [
      '',
      '?limit=1',
      `?limit=1&after=${first.last_id}`,
      '?status=busy',
      '?status=completed&limit=5',
      '?updated_after=0',
      `?updated_after=${Math.floor(Date.now() / 1000) + 60}`,
    ]) {
      const [p, k] = [await portal(q), await v1(q)];
      assert.equal(p.status, 200, `${q}: ${p.text}`);
      assert.deepEqual(p.body, k.body, q);
    }
    assert.deepEqual(
      (await portal('?status=busy')).body.data.map((x: { id: string }) => x.id),
      [busy.body.id],
    );
    for (const q of ['?status=ringingish', '?limit=0', '?after=call_nope', '?colour=red']) {
      const [p, k] = [await portal(q), await v1(q)];
      assert.deepEqual([p.status, p.body.error.code, p.body.error.message], [k.status, k.body.error.code, k.body.error.message], q);
      assert.equal(p.status, 400, q);
    }

    // Another account: the call is not found, as an unknown one; its list is empty; its controls are 404 too.
    const stranger = await voiceAccount(gw, 0);
    for (const id of [c.id, `call_${'0'.repeat(24)}`]) {
      const res = await portal(`/${id}`, stranger.session);
      assert.deepEqual([res.status, res.body.error.code], [404, 'not_found'], id);
      const hang = await call(gw.url, 'POST', `/portal/voice/calls/${id}/hangup`, { token: stranger.session });
      assert.deepEqual([hang.status, hang.body.error.code], [404, 'not_found'], id);
    }
    assert.deepEqual((await portal('', stranger.session)).body, { object: 'list', data: [], has_more: false, first_id: null, last_id: null });

    // Credentials: a session on /portal, a key on /v1, never the other way round.
    assert.equal((await call(gw.url, 'GET', `/portal/voice/calls/${c.id}`)).status, 401);
    assert.deepEqual([(await portal(`/${c.id}`, acc.key)).status, (await portal(`/${c.id}`, acc.key)).body.error.code], [401, 'invalid_session']);
    assert.equal((await v1(`/${c.id}`, acc.session)).status, 401);
    // The dashboard reads by its cookie.
    const byCookie = await call(gw.url, 'GET', `/portal/voice/calls/${c.id}`, {
      headers: { cookie: `${COOKIE}=${acc.session}`, 'sec-fetch-site': 'same-origin' },
    });
    assert.deepEqual(byCookie.body, one.body);
  });

  it('hangs up and cancels for the session as /v1 does; a cookie-signed control from another page changes nothing', async () => {
    const live = await v.dial('+919800000099');
    const ringing = await v.dial('+919800000003', { ring_timeout_seconds: 30 });
    await waitForCall(gw, acc.key, live.body.id, (x) => x.status === 'in_progress');
    await waitForCall(gw, acc.key, ringing.body.id, (x) => x.status === 'ringing');

    const cookie = `${COOKIE}=${acc.session}`;
    for (const headers of [{ cookie }, { cookie, 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'same-site' }] as Record<string, string>[]) {
      const res = await call(gw.url, 'POST', `/portal/voice/calls/${live.body.id}/hangup`, { headers });
      assert.deepEqual([res.status, res.body.error.code], [403, 'cross_site_request']);
    }
    assert.equal((await v1(`/${live.body.id}`)).body.status, 'in_progress', 'still on the line');

    const withBody = await call(gw.url, 'POST', `/portal/voice/calls/${live.body.id}/hangup`, { token: acc.session, body: { now: true } });
    assert.deepEqual([withBody.status, withBody.body.error.code], [400, 'invalid_request']);

    // As the dashboard sends it: the cookie, its header, from its own origin, no body.
    const hang = await call(gw.url, 'POST', `/portal/voice/calls/${live.body.id}/hangup`, {
      headers: { cookie, 'x-gateway-client': 'dashboard', 'sec-fetch-site': 'same-origin' },
    });
    assert.equal(hang.status, 200, hang.text);
    assert.equal(hang.body.id, live.body.id);
    const cancel = await call(gw.url, 'POST', `/portal/voice/calls/${ringing.body.id}/cancel`, { token: acc.session });
    assert.equal(cancel.status, 200, cancel.text);

    const hung = await waitForCall(gw, acc.key, live.body.id, ended);
    assert.deepEqual([hung.status, hung.end_reason], ['completed', 'api_hangup']);
    assert.ok(hung.billed_seconds >= 1 && hung.cost_cents === (hung.billed_seconds * 100_000) / 1e6, JSON.stringify(hung));
    const canceled = await waitForCall(gw, acc.key, ringing.body.id, ended);
    assert.deepEqual([canceled.status, canceled.end_reason, canceled.billed_seconds, canceled.cost_cents], ['canceled', 'api_hangup', 0, 0]);

    // Over: both edges refuse alike.
    for (const what of ['hangup', 'cancel']) {
      const p = await call(gw.url, 'POST', `/portal/voice/calls/${live.body.id}/${what}`, { token: acc.session });
      const k = await call(gw.url, 'POST', `/v1/voice/calls/${live.body.id}/${what}`, { token: acc.key });
      assert.deepEqual([p.status, p.body.error.code, p.body.error.message], [409, 'call_not_active', k.body.error.message], what);
    }
  });

  it('shows an organization’s calls to its members, whoever placed them', async () => {
    const boss = await voiceAccount(gw, 0);
    const member = await voiceAccount(gw, 0);
    const org = await call(gw.url, 'POST', '/portal/org', { token: boss.session, body: { name: 'Call centre' } });
    assert.equal(org.status, 201, org.text);
    const me = (await call(gw.url, 'GET', '/portal/me', { token: member.session })).body.user;
    await joinOrg(gw.url, boss.session, { email: me.email, token: member.session });
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { org_id: org.body.id, amount_cents: 500 } })).status, 201);

    const placed = await v.dial('+919800000002', {}, member);
    assert.equal(placed.status, 202, placed.text);
    const c = await waitForCall(gw, member.key, placed.body.id, ended);
    for (const session of [boss.session, member.session]) {
      const list = (await portal('', session)).body;
      assert.deepEqual(list, (await v1('', member.key)).body);
      assert.deepEqual(
        list.data.map((x: { id: string }) => x.id),
        [c.id],
      );
      assert.deepEqual((await portal(`/${c.id}`, session)).body, c);
    }
    assert.equal((await portal(`/${c.id}`)).status, 404, 'not the account of someone outside the organization');
  });
});
