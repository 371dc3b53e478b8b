// The dashboard's inbound numbers (GET /portal/voice/numbers): an account reads the numbers an
// operator assigned it, with their model, agent and first message, and never another account's
// (an organization's members all read the organization's); re-assigned, a number moves with it; the
// portal cannot assign or change one. And the calls list's `direction` filter, the same on /v1 and
// /portal: an inbound call (the simulator's caller ringing the account's number) apart from the
// account's outbound calls.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN, call, joinOrg } from '../helper.ts';
import { ended, voiceAccount, waitForCall } from './helpers.ts';
import { simulatedVoice } from './simulated.ts';

const AGENT = { type: 'intent', intent_model: 'intent-demo' };
const GREETING = { text: 'Welcome to the bank, how can I help?', mode: 'agent_first' };

describe('the dashboard’s inbound numbers', () => {
  const v = simulatedVoice();
  const numbers = (session: string) => call(v.gw.url, 'GET', '/portal/voice/numbers', { token: session });
  const assign = async (number: string, owner: { type: 'user' | 'org'; id: number }, extra: Record<string, unknown> = {}) => {
    const res = await call(v.gw.url, 'PUT', `/admin/voice/numbers/${number}`, { token: ADMIN_TOKEN, body: { model: 'voice-test', owner, ...extra } });
    assert.ok(res.status === 201 || res.status === 200, res.text);
    return res.body;
  };

  it("lists the account's own numbers only, as the operator set them; re-assigned, a number moves; the portal cannot take one", async () => {
    const a = v.acc;
    const b = await voiceAccount(v.gw, 0);
    const boss = await voiceAccount(v.gw, 0);
    const member = await voiceAccount(v.gw, 0);
    const org = await call(v.gw.url, 'POST', '/portal/org', { token: boss.session, body: { name: 'Inbound desk' } });
    assert.equal(org.status, 201, org.text);
    const memberEmail = (await call(v.gw.url, 'GET', '/portal/me', { token: member.session })).body.user.email as string;
    await joinOrg(v.gw.url, boss.session, { email: memberEmail, token: member.session });

    const mine = await assign(
      '+918047491850',
      { type: 'user', id: a.id },
      { agent: AGENT, first_message: GREETING, language: 'en-IN', max_duration_seconds: 300 },
    );
    await assign('+918047491851', { type: 'user', id: b.id });
    await assign('+918047491852', { type: 'org', id: org.body.id });

    const own = await numbers(a.session);
    assert.equal(own.status, 200, own.text);
    assert.deepEqual(own.body, {
      object: 'list',
      data: [
        {
          number: '+918047491850',
          model: 'voice-test',
          agent: AGENT,
          first_message: GREETING,
          language: 'en-IN',
          max_duration_seconds: 300,
          created_at: mine.created_at,
          updated_at: mine.updated_at,
        },
      ],
    });
    assert.deepEqual(
      (await numbers(b.session)).body.data.map((n: { number: string }) => n.number),
      ['+918047491851'],
    );
    for (const who of [boss, member]) {
      assert.deepEqual(
        (await numbers(who.session)).body.data.map((n: { number: string }) => n.number),
        ['+918047491852'],
        'the organization’s, whatever the role',
      );
    }
    const stranger = await voiceAccount(v.gw, 0);
    assert.deepEqual((await numbers(stranger.session)).body, { object: 'list', data: [] });

    // The operator moves a number: it leaves one list and joins the other.
    await assign('+918047491850', { type: 'user', id: b.id });
    assert.deepEqual((await numbers(a.session)).body.data, []);
    assert.deepEqual(
      (await numbers(b.session)).body.data.map((n: { number: string }) => n.number),
      ['+918047491850', '+918047491851'],
    );

    // Sessions only; and nothing on /portal assigns, changes or releases a number.
    assert.equal((await call(v.gw.url, 'GET', '/portal/voice/numbers')).status, 401);
    assert.deepEqual((await call(v.gw.url, 'GET', '/portal/voice/numbers', { token: a.key })).body.error.code, 'invalid_session');
    for (const method of ['PUT', 'PATCH', 'DELETE', 'POST'] as const) {
      const res = await call(v.gw.url, method, '/portal/voice/numbers/+918047491851', {
        token: a.session,
        body: method === 'DELETE' ? undefined : { model: 'voice-test' },
      });
      assert.equal(res.status, 404, `${method}: ${res.text}`);
    }
    assert.deepEqual((await numbers(b.session)).body.data.length, 2);
  });

  it('filters the calls by direction, on /v1 and /portal alike', async () => {
    const acc = await voiceAccount(v.gw, 1000);
    await assign('+918047491860', { type: 'user', id: acc.id }, { first_message: { mode: 'agent_first' } });
    const rang = await call(v.gw.url, 'POST', '/admin/voice/simulator/calls', { token: ADMIN_TOKEN, body: { to: '+918047491860', from: '+919800000012' } });
    assert.equal(rang.body.taken, true, rang.text);
    const out = await v.dial('+919800000002', {}, acc);
    assert.equal(out.status, 202, out.text);
    await waitForCall(v.gw, acc.key, rang.body.call_id, ended, 30_000);
    await waitForCall(v.gw, acc.key, out.body.id, ended);

    const ids = async (q: string) => {
      const [k, p] = [
        await call(v.gw.url, 'GET', `/v1/voice/calls${q}`, { token: acc.key }),
        await call(v.gw.url, 'GET', `/portal/voice/calls${q}`, { token: acc.session }),
      ];
      assert.equal(k.status, 200, k.text);
      assert.deepEqual(p.body, k.body, q);
      return k.body.data.map((c: { id: string; direction: string }) => `${c.direction} ${c.id}`);
    };
    assert.deepEqual(await ids('?direction=inbound'), [`inbound ${rang.body.call_id}`]);
    assert.deepEqual(await ids('?direction=outbound'), [`outbound ${out.body.id}`]);
    assert.deepEqual(await ids('?direction=inbound&status=busy'), []);
    assert.equal((await ids('')).length, 2);
    for (const q of ['?direction=sideways', '?direction=']) {
      const res = await call(v.gw.url, 'GET', `/portal/voice/calls${q}`, { token: acc.session });
      assert.deepEqual([res.status, res.body.error.code], [400, 'invalid_request'], q);
    }
  });
});
