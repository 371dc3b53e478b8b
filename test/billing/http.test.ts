// Billing through the whole gateway on loopback: portal wallet, settings, usage and subscription;
// admin top-ups, subscriptions and KYC; and the metered /v1 path against a fake upstream: 402 from
// the payer's wallet, per-key 429s with bare bodies and the spec's headers, 403 kyc_required,
// streamed calls billed and recorded. No account ever sees another's wallet or usage.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, createKey, joinOrg, signup, startTestGateway, type TestGateway, inOneRateWindow } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

const PRICING = { input_cents_per_mtok: 150, output_cents_per_mtok: 600 };

describe('billing over HTTP', () => {
  let gw: TestGateway;
  let up: FakeServer;

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up' });
    gw = await startTestGateway({ billing: { usageFlushIntervalMs: 20 } });
    // chat-pricey: a cent per token, so a call costs cents.
    for (const [id, extra] of [
      ['chat-b', {}],
      ['chat-kyc', { requires_kyc: true }],
      ['chat-pricey', { pricing: { input_cents_per_mtok: 1_000_000, output_cents_per_mtok: 1_000_000 } }],
    ] as const) {
      const r = await call(gw.url, 'PUT', `/admin/models/${id}`, {
        token: ADMIN_TOKEN,
        body: {
          type: 'llm',
          owned_by: 'test',
          context_window: 4096,
          max_output_tokens: 256,
          pricing: PRICING,
          routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' }],
          ...extra,
        },
      });
      assert.equal(r.status, 201, r.text);
    }
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  const topup = (body: Record<string, unknown>, token: string | null = ADMIN_TOKEN) =>
    call(gw.url, 'POST', '/admin/topups', { ...(token ? { token } : {}), body });
  const wallet = async (token: string) => (await call(gw.url, 'GET', '/portal/wallet', { token })).body;
  const chat = (key: string, extra: Record<string, unknown> = {}) =>
    call(gw.url, 'POST', '/v1/chat/completions', {
      token: key,
      body: { model: 'chat-b', messages: [{ role: 'user', content: 'tell me about rivers' }], max_tokens: 32, ...extra },
    });
  async function team() {
    const owner = await signup(gw.url);
    const member = await signup(gw.url);
    const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Acme' } });
    assert.equal(org.status, 201);
    await joinOrg(gw.url, owner.token, member);
    return { owner, member, orgId: org.body.id as number };
  }
  async function records(token: string, want: number) {
    for (let i = 0; i < 100; i++) {
      const r = await call(gw.url, 'GET', '/portal/usage/records?limit=100', { token });
      if (r.body.data.length >= want) return r.body.data;
      await sleep(20);
    }
    assert.fail(`fewer than ${want} usage records appeared`);
  }

  it('wallets and top-ups: credited once per reference, shown only to their account', async () => {
    const a = await signup(gw.url);
    const b = await signup(gw.url);
    assert.deepEqual(await wallet(a.token), {
      owner_type: 'user',
      owner_id: a.id,
      balance_cents: 0,
      available_cents: 0,
      held_cents: 0,
      balance_microcents: 0,
      low_balance_threshold_cents: 0,
      kyc_verified: false,
    });

    assert.equal((await topup({ user_id: a.id, amount_cents: 500 }, null)).status, 401);
    assert.equal((await topup({ user_id: a.id, amount_cents: 500 }, 'x'.repeat(30))).status, 401);
    const first = await topup({ user_id: a.id, amount_cents: 500, reference: 'bank-42' });
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(
      [first.body.user_id, first.body.amount_cents, first.body.reference, first.body.status, first.body.new_balance_cents],
      [a.id, 500, 'bank-42', 'credited', 500],
    );
    const repeat = await topup({ user_id: a.id, amount_cents: 500, reference: 'bank-42' });
    assert.equal(repeat.status, 200);
    assert.equal(repeat.body.id, first.body.id);
    assert.equal((await topup({ user_id: a.id, amount_cents: 400, reference: 'bank-42' })).status, 409);
    for (const body of [
      { user_id: a.id, amount_cents: '500' },
      { user_id: a.id, amount_cents: 0 },
      { user_id: a.id, amount_cents: 1.5 },
      { user_id: a.id, org_id: 1, amount_cents: 5 },
      { amount_cents: 5 },
      { user_id: a.id, amount_cents: 5, note: 'x' },
    ]) {
      const r = await topup(body);
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    assert.equal((await topup({ user_id: 99_999_999, amount_cents: 5 })).status, 404);
    assert.deepEqual(
      gw.events.filter((e) => e.event === 'topup' && e.owner.id === a.id).map((e) => e.fields),
      [{ user_id: a.id, amount_cents: 500, new_balance_cents: 500 }],
    );
    assert.equal((await wallet(a.token)).balance_cents, 500);
    assert.equal((await wallet(b.token)).balance_cents, 0, "another account's credit is not visible");

    assert.equal((await call(gw.url, 'PUT', '/portal/settings', { token: a.token, body: { low_balance_threshold_cents: 200 } })).status, 200);
    assert.equal((await wallet(a.token)).low_balance_threshold_cents, 200);
    assert.equal((await wallet(b.token)).low_balance_threshold_cents, 0);
    for (const body of [{ low_balance_threshold_cents: '200' }, { low_balance_threshold_cents: -1 }, {}, { low_balance_threshold_cents: 1, x: 1 }]) {
      assert.equal((await call(gw.url, 'PUT', '/portal/settings', { token: a.token, body })).status, 400, JSON.stringify(body));
    }
    assert.equal((await call(gw.url, 'GET', '/portal/wallet')).status, 401);
  });

  it("members pay from the organization's wallet, their own ignored; a key whose owner left pays from the personal wallet", async () => {
    const { owner, member, orgId } = await team();
    assert.equal((await topup({ user_id: member.id, amount_cents: 1000 })).status, 201);
    const key = (await createKey(gw.url, member.token)).api_key;
    const w = await wallet(member.token);
    assert.deepEqual([w.owner_type, w.owner_id, w.balance_cents], ['org', orgId, 0]);

    const broke = await chat(key);
    assert.equal(broke.status, 402, broke.text);
    assert.deepEqual([broke.body.error.code, broke.body.error.type], ['insufficient_credit', 'insufficient_quota']);

    assert.equal((await topup({ org_id: orgId, amount_cents: 1000 })).status, 201);
    assert.equal((await chat(key)).status, 200);
    const orgAfter = await wallet(owner.token);
    assert.ok(orgAfter.balance_microcents < 1000 * 1_000_000, 'the organization paid');
    // Settings are the owner's: a member may not change them.
    assert.equal((await call(gw.url, 'PUT', '/portal/settings', { token: member.token, body: { low_balance_threshold_cents: 5 } })).status, 403);
    assert.equal((await call(gw.url, 'PUT', '/portal/settings', { token: owner.token, body: { low_balance_threshold_cents: 5 } })).body.owner_type, 'org');

    assert.equal((await call(gw.url, 'POST', '/portal/org/leave', { token: member.token })).status, 200);
    assert.equal((await chat(key)).status, 200);
    const mine = await wallet(member.token);
    assert.equal(mine.owner_type, 'user');
    assert.ok(mine.balance_microcents < 1000 * 1_000_000, 'the personal wallet paid after leaving');
    assert.equal((await wallet(owner.token)).balance_microcents, orgAfter.balance_microcents, 'the organization no longer pays for that key');
  });

  it('per-key rpm and tpd breaches answer 429 with a bare {detail} and the spec headers, one event per window', async () => {
    const u = await signup(gw.url);
    await topup({ user_id: u.id, amount_cents: 10_000 });
    const k = await createKey(gw.url, u.token);
    assert.equal((await call(gw.url, 'PATCH', `/admin/keys/${k.id}`, { token: ADMIN_TOKEN, body: { rpm: 2 } })).status, 200);
    await inOneRateWindow(); // four calls must fall in one minute's window
    // Admitted answers tell the key where it stands, so a client can slow down before a 429.
    const first = await chat(k.api_key);
    assert.equal(first.status, 200);
    assert.deepEqual(
      ['limit', 'remaining'].map((h) => first.headers.get(`x-ratelimit-${h}-rpm`)),
      ['2', '1'],
    );
    const reset = Number(first.headers.get('x-ratelimit-reset-rpm'));
    assert.ok(reset >= 1 && reset <= 60, `reset ${reset}`);
    const second = await chat(k.api_key, { stream: true });
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('x-ratelimit-remaining-rpm'), '0', 'on a stream too');
    const limited = await chat(k.api_key);
    assert.equal(limited.status, 429);
    assert.deepEqual(Object.keys(limited.body), ['detail']);
    assert.match(limited.body.detail, /per-minute limit/);
    assert.equal(limited.headers.get('x-ratelimit-limit-rpm'), '2');
    const retry = Number(limited.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
    assert.equal((await chat(k.api_key)).status, 429);
    const events = gw.events.filter((e) => e.event === 'rate_limit_exceeded' && e.fields.key_prefix === k.prefix);
    assert.equal(events.length, 1);
    assert.deepEqual([events[0]!.fields.limit_type, events[0]!.fields.limit], ['rpm', 2]);

    const t = await createKey(gw.url, u.token);
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${t.id}`, { token: u.token, body: { tpd: 3 } })).status, 200);
    // A call that may use more tokens than the day has left (its prompt and max_tokens) is refused before it runs.
    const short = await chat(t.api_key);
    assert.equal(short.status, 429, short.text);
    assert.deepEqual(Object.keys(short.body), ['detail']);
    assert.match(short.body.detail, /daily limit of 3 tokens has 3 left today .* may use up to \d+ \(its prompt and max_tokens\); lower max_tokens/);
    assert.deepEqual([short.headers.get('x-ratelimit-limit-tpd'), short.headers.get('x-ratelimit-used-tpd')], ['3', '0']);
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${t.id}`, { token: u.token, body: { tpd: 200 } })).status, 200);
    const used = await chat(t.api_key);
    assert.equal(used.status, 200);
    assert.deepEqual(
      ['limit', 'used', 'remaining'].map((h) => used.headers.get(`x-ratelimit-${h}-tpd`)),
      ['200', '0', '200'],
    );
    assert.equal(used.headers.get('x-ratelimit-limit-rpm'), null, 'no RPM headers for a key without an RPM limit');
    const tokens = used.body.usage.total_tokens as number;
    assert.ok(tokens > 3);
    let over = await chat(t.api_key);
    for (let i = 0; i < 50 && over.status === 200; i++) {
      await sleep(20); // the token count trails by one usage flush
      over = await chat(t.api_key);
    }
    assert.equal(over.status, 429);
    assert.deepEqual(Object.keys(over.body), ['detail']);
    assert.match(over.body.detail, /daily limit/);
    assert.match(over.body.detail, /midnight UTC/);
    assert.equal(over.headers.get('x-ratelimit-limit-tpd'), '200');
    const usedTpd = Number(over.headers.get('x-ratelimit-used-tpd'));
    assert.ok(usedTpd >= tokens && usedTpd <= 200, `used ${usedTpd}: never more than the limit`);
    assert.equal(gw.events.filter((e) => e.event === 'rate_limit_exceeded' && e.fields.key_prefix === t.prefix && e.fields.limit_type === 'tpd').length, 1);
  });

  it('a daily spend cap (cpd, cents) stops a key once its day’s spend reaches it: 429 with the cap and the spend', async () => {
    const u = await signup(gw.url);
    await topup({ user_id: u.id, amount_cents: 10_000 });
    const k = await createKey(gw.url, u.token);
    assert.equal((await call(gw.url, 'PATCH', `/portal/keys/${k.id}`, { token: u.token, body: { cpd: 100 } })).status, 200);
    const pricey = { model: 'chat-pricey', max_tokens: 8 }; // holds its prompt and 8 tokens: a cent each
    const first = await chat(k.api_key, pricey);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(
      ['limit', 'used', 'remaining'].map((h) => first.headers.get(`x-ratelimit-${h}-cpd`)),
      ['100', '0', '100'],
    );
    const costOf = (r: { body: any }) => r.body.usage.prompt_tokens + r.body.usage.completion_tokens; // a cent per token
    assert.ok(costOf(first) >= 5 && costOf(first) < 50, `one call costs ${costOf(first)} cents`);
    let spent = costOf(first);
    let over = await chat(k.api_key, pricey);
    for (let i = 0; i < 50 && over.status === 200; i++) {
      spent += costOf(over);
      await sleep(20); // what a call held beyond its cost comes back with the usage flush
      over = await chat(k.api_key, pricey);
    }
    assert.equal(over.status, 429, over.text);
    assert.deepEqual(Object.keys(over.body), ['detail']);
    assert.match(over.body.detail, /daily spend limit of 100 cents/);
    assert.equal(over.headers.get('x-ratelimit-limit-cpd'), '100');
    assert.ok(spent <= 100, `spent ${spent} cents: never more than the cap`);
    assert.ok(Number(over.headers.get('x-ratelimit-used-cpd')) <= 100);
    assert.ok(Number(over.headers.get('retry-after')) > 0);
    assert.equal(gw.events.filter((e) => e.event === 'rate_limit_exceeded' && e.fields.key_prefix === k.prefix && e.fields.limit_type === 'cpd').length, 1);
    // Another key of the same account is not capped by it.
    assert.equal((await chat((await createKey(gw.url, u.token)).api_key, pricey)).status, 200);
  });

  it("kyc_required for a model that needs verification; an organization's calls count its owner's", async () => {
    const u = await signup(gw.url);
    await topup({ user_id: u.id, amount_cents: 1000 });
    const key = (await createKey(gw.url, u.token)).api_key;
    const kycChat = () => chat(key, { model: 'chat-kyc' });
    const refused = await kycChat();
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error.code, 'kyc_required');
    const set = await call(gw.url, 'PUT', `/admin/users/${u.id}/kyc`, { token: ADMIN_TOKEN, body: { verified: true } });
    assert.deepEqual([set.status, set.body], [200, { user_id: u.id, kyc_verified: true }]);
    assert.equal((await kycChat()).status, 200);

    const { owner, member, orgId } = await team();
    await topup({ org_id: orgId, amount_cents: 1000 });
    await call(gw.url, 'PUT', `/admin/users/${member.id}/kyc`, { token: ADMIN_TOKEN, body: { verified: true } });
    const mkey = (await createKey(gw.url, member.token)).api_key;
    assert.equal((await chat(mkey, { model: 'chat-kyc' })).body.error?.code, 'kyc_required');
    await call(gw.url, 'PUT', `/admin/users/${owner.id}/kyc`, { token: ADMIN_TOKEN, body: { verified: true } });
    assert.equal((await chat(mkey, { model: 'chat-kyc' })).status, 200);

    assert.equal((await call(gw.url, 'PUT', '/admin/users/99999999/kyc', { token: ADMIN_TOKEN, body: { verified: true } })).status, 404);
    assert.equal((await call(gw.url, 'PUT', `/admin/users/${u.id}/kyc`, { token: ADMIN_TOKEN, body: { verified: 'yes' } })).status, 400);
    assert.equal((await call(gw.url, 'PUT', `/admin/users/${u.id}/kyc`, { token: u.token, body: { verified: false } })).status, 401);
  });

  it('usage: streamed calls are billed and recorded; members see their own, owners everything, strangers nothing', async () => {
    const { owner, member, orgId } = await team();
    await topup({ org_id: orgId, amount_cents: 1000 });
    const [ok, mk] = [await createKey(gw.url, owner.token), await createKey(gw.url, member.token)];
    assert.equal((await chat(ok.api_key)).status, 200);
    const before = (await wallet(owner.token)).balance_microcents;
    const streamed = await fetch(`${gw.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mk.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'chat-b', messages: [{ role: 'user', content: 'tell me about rivers' }], stream: true }),
    });
    assert.equal(streamed.status, 200);
    assert.match(await streamed.text(), /\[DONE\]/);

    const all = await records(owner.token, 2);
    assert.equal(all.length, 2);
    const [s, n] = all; // newest first
    assert.deepEqual([s.user_id, s.key_prefix, s.model, s.owner_type, s.owner_id, s.status], [member.id, mk.prefix, 'chat-b', 'org', orgId, 'ok']);
    assert.equal(n.key_prefix, ok.prefix);
    assert.ok(s.completion_tokens > 0 && s.cost_microcents > 0, 'streamed spend is not recorded as zero');
    assert.equal(s.cost_microcents, s.prompt_tokens * PRICING.input_cents_per_mtok + s.completion_tokens * PRICING.output_cents_per_mtok);
    assert.equal(before - (await wallet(owner.token)).balance_microcents - s.cost_microcents, 0, 'the stream was charged what its record says');
    assert.match(s.route, /^chat-b#0$/);
    assert.ok(Date.parse(s.created_at) && s.request_id.startsWith('req_') && Number.isInteger(s.latency_ms));

    const page1 = await call(gw.url, 'GET', '/portal/usage/records?limit=1', { token: owner.token });
    assert.equal(page1.body.has_more, true);
    const page2 = await call(gw.url, 'GET', `/portal/usage/records?limit=1&after=${page1.body.next_after}`, { token: owner.token });
    assert.deepEqual([page2.body.data[0].id, page2.body.has_more, page2.body.next_after], [n.id, false, null]);

    const mineRecords = await records(member.token, 1);
    assert.deepEqual(
      mineRecords.map((r: any) => r.user_id),
      [member.id],
    );
    const byMember = await call(gw.url, 'GET', '/portal/usage?group_by=member', { token: owner.token });
    assert.equal(byMember.status, 200, byMember.text);
    assert.deepEqual(
      byMember.body.data.map((r: any) => [r.user_id, r.requests]).sort(),
      [
        [owner.id, 1],
        [member.id, 1],
      ].sort(),
    );
    assert.equal(byMember.body.totals.cost_microcents, s.cost_microcents + n.cost_microcents);
    const own = await call(gw.url, 'GET', '/portal/usage?group_by=model', { token: member.token });
    assert.deepEqual([own.body.scope, own.body.totals.requests, own.body.data[0].model], ['member', 1, 'chat-b']);

    const stranger = await signup(gw.url);
    assert.equal((await call(gw.url, 'GET', '/portal/usage', { token: stranger.token })).body.totals.requests, 0);
    assert.deepEqual((await call(gw.url, 'GET', '/portal/usage/records', { token: stranger.token })).body.data, []);

    for (const q of ['group_by=week', 'from=2026-13-01', 'from=yesterday', 'limit=0', 'limit=abc', 'limit=101', 'after=../x', 'foo=1']) {
      const path = q.startsWith('limit') || q.startsWith('after') ? `/portal/usage/records?${q}` : `/portal/usage?${q}`;
      assert.equal((await call(gw.url, 'GET', path, { token: owner.token })).status, 400, q);
    }
  });

  it('subscriptions: an administrator starts a plan, its first cycle is credited once; the account reads it', async () => {
    const u = await signup(gw.url);
    assert.equal((await call(gw.url, 'GET', '/portal/subscription', { token: u.token })).body.status, 'none');
    const put = () => call(gw.url, 'PUT', `/admin/subscriptions/user/${u.id}`, { token: ADMIN_TOKEN, body: { plan: 'starter' } });
    const started = await put();
    assert.equal(started.status, 200, started.text);
    assert.deepEqual([started.body.status, started.body.plan, started.body.monthly_credit_cents, started.body.cycles_credited], ['active', 'starter', 1000, 1]);
    assert.equal((await put()).status, 200);
    assert.equal((await wallet(u.token)).balance_cents, 1000);
    const mine = await call(gw.url, 'GET', '/portal/subscription', { token: u.token });
    assert.deepEqual([mine.body.owner_type, mine.body.owner_id, mine.body.plan], ['user', u.id, 'starter']);
    assert.ok(Date.parse(mine.body.next_renewal_at) > Date.now());

    assert.equal((await call(gw.url, 'PUT', `/admin/subscriptions/user/${u.id}`, { token: ADMIN_TOKEN, body: { plan: 'gold' } })).status, 400);
    assert.equal((await call(gw.url, 'PUT', `/admin/subscriptions/team/${u.id}`, { token: ADMIN_TOKEN, body: { plan: 'starter' } })).status, 400);
    assert.equal((await call(gw.url, 'PUT', '/admin/subscriptions/org/99999999', { token: ADMIN_TOKEN, body: { plan: 'starter' } })).status, 404);
    assert.equal((await call(gw.url, 'PUT', `/admin/subscriptions/user/${u.id}`, { token: u.token, body: { plan: 'starter' } })).status, 401);
    const canceled = await call(gw.url, 'PUT', `/admin/subscriptions/user/${u.id}`, { token: ADMIN_TOKEN, body: { plan: null } });
    assert.deepEqual([canceled.body.status, canceled.body.next_renewal_at], ['canceled', null]);
  });
});
