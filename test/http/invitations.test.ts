// Organization invitations over HTTP: nobody joins without accepting; the inviter's answer reveals
// nothing about the e-mail; the invitee lists, accepts and declines; inviters list and revoke;
// invitations expire (injected clock); per-org and per-inviter limits; a cap on pending ones.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ADMIN_TOKEN, call, createKey, joinOrg, signup, startTestGateway, type Res, type TestGateway } from '../helper.ts';
import { startOpenAIUpstream, type FakeServer } from '../fakes/openai-upstream.ts';

type User = Awaited<ReturnType<typeof signup>>;

const invite = (gw: TestGateway, inviter: User, email: string, role = 'member') =>
  call(gw.url, 'POST', '/portal/org/members', { token: inviter.token, body: { email, role } });
const answer = (gw: TestGateway, user: User, id: number, verb: 'accept' | 'decline') =>
  call(gw.url, 'POST', `/portal/invitations/${id}/${verb}`, { token: user.token });
const received = async (gw: TestGateway, user: User) => (await call(gw.url, 'GET', '/portal/invitations', { token: user.token })).body.invitations as any[];
const pendingOf = async (gw: TestGateway, manager: User) =>
  (await call(gw.url, 'GET', '/portal/org/invitations', { token: manager.token })).body.invitations as any[];

async function orgOf(gw: TestGateway, name = 'Acme') {
  const owner = await signup(gw.url);
  const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name } });
  assert.equal(org.status, 201, org.text);
  return { owner, orgId: org.body.id as number };
}

describe('organization invitations', () => {
  let gw: TestGateway;
  let up: FakeServer;

  before(async () => {
    up = await startOpenAIUpstream({ apiKey: 'sk-up' });
    gw = await startTestGateway({ billing: { usageFlushIntervalMs: 20 } });
    const model = await call(gw.url, 'PUT', '/admin/models/chat-b', {
      token: ADMIN_TOKEN,
      body: {
        type: 'llm',
        owned_by: 'test',
        context_window: 4096,
        max_output_tokens: 256,
        pricing: { input_cents_per_mtok: 150, output_cents_per_mtok: 600 },
        routes: [{ provider: 'openai', base_url: `${up.url}/v1`, api_key: 'sk-up', upstream_model: 'gpt-up' }],
      },
    });
    assert.equal(model.status, 201, model.text);
  });
  after(async () => {
    await gw.destroy();
    await up.close();
  });

  it('the invitation alone moves nobody: the invitee keeps paying from their own wallet and their usage stays theirs', async () => {
    const victim = await signup(gw.url);
    assert.equal((await call(gw.url, 'POST', '/admin/topups', { token: ADMIN_TOKEN, body: { user_id: victim.id, amount_cents: 500 } })).status, 201);
    const key = (await createKey(gw.url, victim.token)).api_key;
    const { owner: attacker } = await orgOf(gw, 'Attacker');

    const posted = await invite(gw, attacker, victim.email);
    const chat = await call(gw.url, 'POST', '/v1/chat/completions', {
      token: key,
      body: { model: 'chat-b', messages: [{ role: 'user', content: 'hello' }], max_tokens: 16, user: 'end-user-7' },
    });
    assert.equal(chat.status, 200, `the victim's key still pays from the victim's wallet: ${chat.text}`);
    const wallet = (await call(gw.url, 'GET', '/portal/wallet', { token: victim.token })).body;
    assert.deepEqual([wallet.owner_type, wallet.owner_id], ['user', victim.id]);
    assert.ok(wallet.balance_microcents < 500 * 1_000_000, 'the personal wallet paid');
    for (let i = 0; i < 100 && (await call(gw.url, 'GET', '/portal/usage/records', { token: victim.token })).body.data.length === 0; i++) await sleep(20);
    const mine = (await call(gw.url, 'GET', '/portal/usage/records', { token: victim.token })).body.data;
    assert.equal(mine.length, 1);
    assert.deepEqual(
      (await call(gw.url, 'GET', '/portal/usage/records', { token: attacker.token })).body.data,
      [],
      "the inviter does not read the invitee's usage",
    );
    const members = (await call(gw.url, 'GET', '/portal/org/members', { token: attacker.token })).body.members;
    assert.deepEqual(
      members.map((m: any) => m.user_id),
      [attacker.id],
    );
    assert.equal(posted.status, 202, posted.text);
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: victim.token })).status, 404);
  });

  it('answers the same for an unknown e-mail, a user in another organization and a free user', async () => {
    const { owner } = await orgOf(gw);
    const other = await orgOf(gw, 'Other');
    const free = await signup(gw.url);
    const cases = [`nobody_${Date.now()}@example.com`, other.owner.email, free.email];
    const answers: Res[] = [];
    for (const email of cases) answers.push(await invite(gw, owner, email));
    const shape = (r: Res) => ({
      status: r.status,
      headers: [...r.headers.keys()].filter((h) => !['date', 'x-request-id', 'content-length'].includes(h)).sort(),
      body: { ...r.body, invitation: { ...r.body.invitation, id: 0, email: '', expires_at: '', created_at: '' } },
    });
    for (const r of answers) assert.deepEqual(shape(r), shape(answers[0]!));
    assert.equal(answers[0]!.status, 202);
    assert.deepEqual(Object.keys(answers[0]!.body.invitation).sort(), ['created_at', 'email', 'expires_at', 'id', 'role', 'status']);
    assert.deepEqual(
      answers.map((r) => [r.body.invitation.email, r.body.invitation.role, r.body.invitation.status]),
      cases.map((e) => [e, 'member', 'pending']),
    );
    const created = Date.parse(answers[0]!.body.invitation.created_at);
    assert.equal(Date.parse(answers[0]!.body.invitation.expires_at) - created, 7 * 86_400_000, 'seven days by default');
    // The content-length differs only with the e-mail's length.
    const lengths = answers.map((r, i) => Number(r.headers.get('content-length')) - cases[i]!.length - String(r.body.invitation.id).length);
    assert.equal(new Set(lengths).size, 1);
  });

  it('the invitee sees the invitation and accepts it: joins with the role, pays from the org wallet', async () => {
    const { owner, orgId } = await orgOf(gw, 'Joinable');
    const invitee = await signup(gw.url);
    const inv = (await invite(gw, owner, invitee.email.toUpperCase(), 'admin')).body.invitation;
    assert.equal(inv.email, invitee.email, 'the e-mail is normalized as accounts store it');
    const seen = await received(gw, invitee);
    assert.deepEqual(seen, [
      { id: inv.id, org_id: orgId, org_name: 'Joinable', role: 'admin', inviter_email: owner.email, expires_at: inv.expires_at, created_at: inv.created_at },
    ]);
    assert.deepEqual(
      (await pendingOf(gw, owner)).map((i) => i.id),
      [inv.id],
    );

    const accepted = await answer(gw, invitee, inv.id, 'accept');
    assert.equal(accepted.status, 200, accepted.text);
    assert.deepEqual([accepted.body.id, accepted.body.name, accepted.body.role], [orgId, 'Joinable', 'admin']);
    const members = (await call(gw.url, 'GET', '/portal/org/members', { token: owner.token })).body.members;
    assert.deepEqual(
      members.map((m: any) => [m.user_id, m.role]),
      [
        [owner.id, 'owner'],
        [invitee.id, 'admin'],
      ],
    );
    assert.deepEqual((await call(gw.url, 'GET', '/portal/wallet', { token: invitee.token })).body.owner_type, 'org');
    assert.deepEqual(await received(gw, invitee), []);
    assert.deepEqual(await pendingOf(gw, owner), []);
    assert.equal((await answer(gw, invitee, inv.id, 'accept')).status, 404, 'an accepted invitation is gone');
    // The new admin manages invitations too.
    assert.equal((await invite(gw, invitee, `x_${Date.now()}@example.com`)).status, 202);
  });

  it('declining: the invitation is gone, nobody joins, and a new invitation can follow', async () => {
    const { owner } = await orgOf(gw);
    const invitee = await signup(gw.url);
    const first = (await invite(gw, owner, invitee.email)).body.invitation;
    const declined = await answer(gw, invitee, first.id, 'decline');
    assert.equal(declined.status, 200);
    assert.deepEqual(declined.body, { id: first.id, status: 'declined' });
    assert.deepEqual(await received(gw, invitee), []);
    assert.deepEqual(await pendingOf(gw, owner), []);
    assert.equal((await answer(gw, invitee, first.id, 'accept')).status, 404);
    assert.equal((await answer(gw, invitee, first.id, 'decline')).status, 404);
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: invitee.token })).status, 404);
    const again = (await invite(gw, owner, invitee.email)).body.invitation;
    assert.notEqual(again.id, first.id);
    assert.equal((await answer(gw, invitee, again.id, 'accept')).status, 200);
  });

  it('re-inviting while pending answers the same invitation, also when the requests race', async () => {
    const { owner } = await orgOf(gw);
    const invitee = await signup(gw.url);
    const first = await invite(gw, owner, invitee.email);
    const again = await invite(gw, owner, invitee.email);
    assert.deepEqual([again.status, again.body], [first.status, first.body]);
    const racer = await signup(gw.url);
    const raced = await Promise.all([1, 2, 3].map(() => invite(gw, owner, racer.email)));
    assert.deepEqual(
      raced.map((r) => r.status),
      [202, 202, 202],
    );
    assert.equal(new Set(raced.map((r) => r.body.invitation.id)).size, 1);
    assert.equal((await pendingOf(gw, owner)).length, 2);
    assert.equal((await received(gw, racer)).length, 1);
  });

  it('revoking: owner or admin of that organization only; another org’s id is 404; the invitee can no longer accept', async () => {
    const { owner } = await orgOf(gw);
    const member = await signup(gw.url);
    await joinOrg(gw.url, owner.token, member);
    const invitee = await signup(gw.url);
    const inv = (await invite(gw, owner, invitee.email)).body.invitation;

    const stranger = await orgOf(gw, 'Stranger');
    const cross = await call(gw.url, 'DELETE', `/portal/org/invitations/${inv.id}`, { token: stranger.owner.token });
    assert.equal(cross.status, 404);
    assert.equal(cross.body.error.code, 'not_found');
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/invitations/${inv.id}`, { token: member.token })).status, 403);
    assert.equal((await call(gw.url, 'GET', '/portal/org/invitations', { token: member.token })).status, 403);
    assert.equal((await call(gw.url, 'POST', '/portal/org/members', { token: member.token, body: { email: invitee.email, role: 'member' } })).status, 403);
    assert.equal((await call(gw.url, 'GET', '/portal/org/invitations', { token: invitee.token })).status, 404, 'no organization');

    const revoked = await call(gw.url, 'DELETE', `/portal/org/invitations/${inv.id}`, { token: owner.token });
    assert.equal(revoked.status, 200);
    assert.deepEqual(revoked.body, { id: inv.id, revoked: true });
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/invitations/${inv.id}`, { token: owner.token })).status, 404);
    assert.deepEqual(await received(gw, invitee), []);
    assert.equal((await answer(gw, invitee, inv.id, 'accept')).status, 404);
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: invitee.token })).status, 404);
  });

  it("someone else's invitation is 404 to accept or decline, and stays the invitee's", async () => {
    const { owner } = await orgOf(gw);
    const invitee = await signup(gw.url);
    const thief = await signup(gw.url);
    const inv = (await invite(gw, owner, invitee.email)).body.invitation;
    for (const verb of ['accept', 'decline'] as const) {
      const r = await answer(gw, thief, inv.id, verb);
      assert.equal(r.status, 404, verb);
      assert.equal(r.body.error.code, 'not_found');
    }
    assert.deepEqual(await received(gw, thief), []);
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: thief.token })).status, 404);
    assert.equal((await answer(gw, invitee, inv.id, 'accept')).status, 200);
    for (const id of ['999999999', 'abc', '-1'])
      assert.ok([400, 404].includes((await call(gw.url, 'POST', `/portal/invitations/${id}/accept`, { token: thief.token })).status), id);
  });

  it('an invitation made before the e-mail had an account never becomes a membership', async () => {
    const { owner } = await orgOf(gw);
    const email = `later_${Date.now()}@example.com`;
    const inv = (await invite(gw, owner, email)).body.invitation;
    const later = await signup(gw.url, email);
    assert.deepEqual(await received(gw, later), []);
    assert.equal((await answer(gw, later, inv.id, 'accept')).status, 404);
    // Re-inviting while that one is pending is the same unanswerable invitation; revoking and inviting anew reaches the account.
    assert.equal((await invite(gw, owner, email)).body.invitation.id, inv.id);
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/invitations/${inv.id}`, { token: owner.token })).status, 200);
    const fresh = (await invite(gw, owner, email)).body.invitation;
    assert.equal((await answer(gw, later, fresh.id, 'accept')).status, 200);
  });

  it('accepting while in an organization is 409 already_in_org; after leaving, the invitation still works', async () => {
    const a = await orgOf(gw, 'A');
    const b = await orgOf(gw, 'B');
    const user = await signup(gw.url);
    await joinOrg(gw.url, a.owner.token, user);
    const inv = (await invite(gw, b.owner, user.email)).body.invitation;
    const refused = await answer(gw, user, inv.id, 'accept');
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'already_in_org');
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: user.token })).body.id, a.orgId);
    assert.equal((await call(gw.url, 'POST', '/portal/org/leave', { token: user.token })).status, 200);
    const accepted = await answer(gw, user, inv.id, 'accept');
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal(accepted.body.id, b.orgId);
  });

  it('deleting the organization revokes its pending invitations', async () => {
    const { owner } = await orgOf(gw);
    const invitee = await signup(gw.url);
    const inv = (await invite(gw, owner, invitee.email)).body.invitation;
    assert.equal((await call(gw.url, 'DELETE', '/portal/org', { token: owner.token })).status, 200);
    assert.deepEqual(await received(gw, invitee), []);
    assert.equal((await answer(gw, invitee, inv.id, 'accept')).status, 404);
  });

  it('bad input is 400, never a 500', async () => {
    const { owner } = await orgOf(gw);
    for (const body of [
      { email: 'not-an-email', role: 'member' },
      { email: 'a@example.com', role: 'owner' },
      { email: 'a@example.com', role: 'boss' },
      { email: 'a@example.com' },
      { email: 'a@example.com', role: 'member', x: 1 },
      { email: 7, role: 'member' },
    ]) {
      const r = await call(gw.url, 'POST', '/portal/org/members', { token: owner.token, body });
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    assert.equal((await call(gw.url, 'GET', '/portal/invitations')).status, 401);
    assert.equal((await call(gw.url, 'POST', '/portal/invitations/1/accept')).status, 401);
  });
});

describe('organization invitations over time: expiry, rate limits, the pending cap', () => {
  let gw: TestGateway;
  let t = Date.UTC(2026, 0, 5, 10, 0, 0);
  const advance = (ms: number) => void (t += ms);

  before(async () => {
    gw = await startTestGateway(
      {
        auth: { argon2: { memoryCost: 1024, timeCost: 1, parallelism: 1 }, signupMaxPerAddressPerHour: 100_000, sessionTtlHours: 24 * 365 },
        orgs: { invitations: { perHour: 3, perDay: 6, maxPendingPerOrg: 4 } },
      },
      { now: () => t },
    );
  });
  after(() => gw.destroy());

  it('expires after seven days: no longer listed, accept and decline answer 410, a new invitation can be made', async () => {
    const { owner } = await orgOf(gw);
    const invitee = await signup(gw.url);
    const inv = (await invite(gw, owner, invitee.email)).body.invitation;
    assert.equal(Date.parse(inv.expires_at), t + 7 * 86_400_000);
    advance(7 * 86_400_000 - 1000);
    assert.equal((await received(gw, invitee)).length, 1, 'still open a second before');
    advance(1000);
    assert.deepEqual(await received(gw, invitee), []);
    assert.deepEqual(await pendingOf(gw, owner), []);
    for (const verb of ['accept', 'decline'] as const) {
      const r = await answer(gw, invitee, inv.id, verb);
      assert.equal(r.status, 410, verb);
      assert.equal(r.body.error.code, 'invitation_expired');
    }
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: invitee.token })).status, 404);
    const again = (await invite(gw, owner, invitee.email)).body.invitation;
    assert.notEqual(again.id, inv.id, 're-inviting after expiry makes a new invitation');
    assert.equal((await answer(gw, invitee, again.id, 'accept')).status, 200);
  });

  it('limits new invitations per organization and per inviter, with Retry-After; neither re-invites nor refusals count', async () => {
    advance(86_400_000 - (t % 86_400_000)); // a fresh day
    const { owner } = await orgOf(gw);
    const admin = await signup(gw.url);
    await joinOrg(gw.url, owner.token, admin, 'admin');
    const emails = [0, 1, 2, 3, 4, 5].map((i) => `rl${i}_${t}@example.com`);
    for (const e of emails.slice(0, 2)) assert.equal((await invite(gw, owner, e)).status, 202);
    assert.equal((await invite(gw, owner, emails[0]!)).status, 202, 'a pending re-invite is answered, not counted');
    const limited = await invite(gw, owner, emails[2]!);
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limit_exceeded');
    assert.equal(limited.headers.get('retry-after'), '3600');
    const byAdmin = await invite(gw, admin, emails[2]!);
    assert.equal(byAdmin.status, 429, "another admin shares the organization's limit");

    // Revoking frees a pending place (the cap is 4) but gives no invitation back.
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/invitations/${(await pendingOf(gw, owner))[0].id}`, { token: owner.token })).status, 200);
    assert.equal((await invite(gw, owner, emails[2]!)).status, 429);
    advance(3600_000);
    for (const e of emails.slice(2, 5)) assert.equal((await invite(gw, owner, e)).status, 202, 'refused attempts did not use up the day');
    await call(gw.url, 'DELETE', `/portal/org/invitations/${(await pendingOf(gw, owner))[0].id}`, { token: owner.token });
    const daily = await invite(gw, owner, emails[5]!);
    assert.equal(daily.status, 429, 'six a day');
    assert.equal(Number(daily.headers.get('retry-after')), 86_400 - 3600);

    // The inviter's own limit follows them into a new organization.
    for (const p of await pendingOf(gw, owner)) await call(gw.url, 'DELETE', `/portal/org/invitations/${p.id}`, { token: owner.token });
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/members/${admin.id}`, { token: owner.token })).status, 200);
    assert.equal((await call(gw.url, 'DELETE', '/portal/org', { token: owner.token })).status, 200);
    assert.equal((await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Next' } })).status, 201);
    assert.equal((await invite(gw, owner, emails[5]!)).status, 429, 'the inviter limit');
    advance(86_400_000 - 3600_000);
    assert.equal((await invite(gw, owner, emails[5]!)).status, 202, 'a new day');
  });

  it('caps pending invitations per organization (409); revoking frees a place; expired ones do not count', async () => {
    advance(86_400_000);
    const { owner } = await orgOf(gw);
    const admin = await signup(gw.url);
    await joinOrg(gw.url, owner.token, admin, 'admin');
    const ids: number[] = [];
    for (const i of [0, 1]) ids.push((await invite(gw, owner, `cap${i}_${t}@example.com`)).body.invitation.id);
    advance(3600_000); // (three an hour)
    for (const i of [2, 3]) ids.push((await invite(gw, admin, `cap${i}_${t}@example.com`)).body.invitation.id);
    const full = await invite(gw, admin, `cap4_${t}@example.com`);
    assert.equal(full.status, 409);
    assert.equal(full.body.error.code, 'conflict');
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/invitations/${ids[0]}`, { token: admin.token })).status, 200);
    assert.equal((await invite(gw, admin, `cap4_${t}@example.com`)).status, 202);
    advance(7 * 86_400_000);
    assert.equal((await invite(gw, owner, `cap5_${t}@example.com`)).status, 202);
  });
});
