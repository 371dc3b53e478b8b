// Organizations: roles, membership rules, transfer, delete, and isolation between accounts.
// Invitations themselves: test/http/invitations.test.ts.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { call, joinOrg, signup, startTestGateway, type TestGateway } from '../helper.ts';

describe('organizations', () => {
  let gw: TestGateway;
  before(async () => {
    gw = await startTestGateway();
  });
  after(() => gw.destroy());

  async function team() {
    const owner = await signup(gw.url);
    const admin = await signup(gw.url);
    const member = await signup(gw.url);
    const org = await call(gw.url, 'POST', '/portal/org', { token: owner.token, body: { name: 'Acme Voice' } });
    assert.equal(org.status, 201, org.text);
    await joinOrg(gw.url, owner.token, admin, 'admin');
    await joinOrg(gw.url, admin.token, member);
    return { owner, admin, member, org: org.body };
  }

  it('creates an organization in the spec shape and lists members with roles', async () => {
    const { owner, admin, member, org } = await team();
    assert.equal(typeof org.id, 'number');
    assert.equal(org.name, 'Acme Voice');
    assert.equal(org.wallet_cents, 0);
    assert.ok(Date.parse(org.created_at));
    const list = await call(gw.url, 'GET', '/portal/org/members', { token: member.token });
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.members.map((m: any) => [m.user_id, m.email, m.role]),
      [
        [owner.id, owner.email, 'owner'],
        [admin.id, admin.email, 'admin'],
        [member.id, member.email, 'member'],
      ],
    );
    for (const m of list.body.members) assert.ok(Date.parse(m.joined_at));
    const got = await call(gw.url, 'GET', '/portal/org', { token: member.token });
    assert.equal(got.body.id, org.id);
    assert.equal(got.body.role, 'member');
    const me = await call(gw.url, 'GET', '/portal/me', { token: admin.token });
    assert.deepEqual(me.body.organization, { id: org.id, role: 'admin' });
  });

  it('invitations: members cannot invite, nobody is invited as owner, a member cannot found a second org', async () => {
    const { owner, member } = await team();
    const outsider = await signup(gw.url);
    const byMember = await call(gw.url, 'POST', '/portal/org/members', { token: member.token, body: { email: outsider.email, role: 'member' } });
    assert.equal(byMember.status, 403);
    assert.equal(byMember.body.error.code, 'role_forbidden');
    const asOwner = await call(gw.url, 'POST', '/portal/org/members', { token: owner.token, body: { email: outsider.email, role: 'owner' } });
    assert.equal(asOwner.status, 400);
    const badRole = await call(gw.url, 'POST', '/portal/org/members', { token: owner.token, body: { email: outsider.email, role: 'boss' } });
    assert.equal(badRole.status, 400);
    // Someone already in an org cannot create a second one (accepting another org's invitation: invitations.test.ts).
    const second = await call(gw.url, 'POST', '/portal/org', { token: member.token, body: { name: 'Other' } });
    assert.equal(second.status, 409);
  });

  it('concurrent acceptances of invitations from two orgs: exactly one wins', async () => {
    const a = await team();
    const b = await team();
    const target = await signup(gw.url);
    const ids: number[] = [];
    for (const t of [a, b]) {
      const inv = await call(gw.url, 'POST', '/portal/org/members', { token: t.owner.token, body: { email: target.email, role: 'member' } });
      assert.equal(inv.status, 202, inv.text);
      ids.push(inv.body.invitation.id);
    }
    const results = await Promise.all(ids.map((id) => call(gw.url, 'POST', `/portal/invitations/${id}/accept`, { token: target.token })));
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
    assert.equal(results.find((r) => r.status === 409)!.body.error.code, 'already_in_org');
    const winner = results.find((r) => r.status === 200)!.body.id;
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: target.token })).body.id, winner);
  });

  it('removal rules: admin cannot remove the owner or another admin; the owner can; members cannot', async () => {
    const { owner, admin, member } = await team();
    const admin2 = await signup(gw.url);
    await joinOrg(gw.url, owner.token, admin2, 'admin');
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/members/${owner.id}`, { token: admin.token })).status, 403);
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/members/${admin2.id}`, { token: admin.token })).status, 403);
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/members/${admin.id}`, { token: member.token })).status, 403);
    const removed = await call(gw.url, 'DELETE', `/portal/org/members/${member.id}`, { token: admin.token });
    assert.equal(removed.status, 200);
    assert.deepEqual(removed.body, { user_id: member.id, removed: true });
    assert.equal((await call(gw.url, 'GET', '/portal/org', { token: member.token })).status, 404);
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/members/${admin2.id}`, { token: owner.token })).status, 200);
    // A user of another org is "not found", never revealed.
    const other = await team();
    assert.equal((await call(gw.url, 'DELETE', `/portal/org/members/${other.member.id}`, { token: owner.token })).status, 404);
  });

  it('the owner cannot leave (409); others can; leaving keeps the user and their keys', async () => {
    const { owner, member } = await team();
    const key = await call(gw.url, 'POST', '/portal/keys', { token: member.token, body: { name: 'mine' } });
    const left = await call(gw.url, 'POST', '/portal/org/leave', { token: owner.token });
    assert.equal(left.status, 409);
    assert.equal(left.body.error.code, 'owner_cannot_leave');
    assert.match(left.body.error.message, /transfer/);
    const ok = await call(gw.url, 'POST', '/portal/org/leave', { token: member.token });
    assert.equal(ok.status, 200);
    const keys = await call(gw.url, 'GET', '/portal/keys', { token: member.token });
    assert.equal(keys.body.data[0].id, key.body.id);
    assert.equal(keys.body.data[0].status, 'active');
    assert.equal((await call(gw.url, 'POST', '/portal/org/leave', { token: member.token })).status, 404);
  });

  it('transfers ownership; only the owner may, and the old owner becomes admin', async () => {
    const { owner, admin, member } = await team();
    assert.equal((await call(gw.url, 'POST', '/portal/org/transfer', { token: admin.token, body: { user_id: member.id } })).status, 403);
    const t = await call(gw.url, 'POST', '/portal/org/transfer', { token: owner.token, body: { user_id: member.id } });
    assert.equal(t.status, 200, t.text);
    const list = await call(gw.url, 'GET', '/portal/org/members', { token: owner.token });
    const roles = Object.fromEntries(list.body.members.map((m: any) => [m.user_id, m.role]));
    assert.equal(roles[member.id], 'owner');
    assert.equal(roles[owner.id], 'admin');
    assert.equal((await call(gw.url, 'POST', '/portal/org/leave', { token: owner.token })).status, 200, 'the former owner can now leave');
  });

  it("changes roles: the owner makes a member admin and back; admins and members may not; the owner's role moves only by transfer", async () => {
    const { owner, admin, member } = await team();
    const patch = (token: string, id: number, role: string) => call(gw.url, 'PATCH', `/portal/org/members/${id}`, { token, body: { role } });
    const byAdmin = await patch(admin.token, member.id, 'admin');
    assert.equal(byAdmin.status, 403);
    assert.equal(byAdmin.body.error.code, 'role_forbidden');
    assert.equal((await patch(member.token, member.id, 'admin')).status, 403);
    assert.equal((await patch(owner.token, owner.id, 'member')).status, 403, "the owner's own role");
    assert.equal((await patch(owner.token, member.id, 'owner')).status, 400, 'ownership moves by transfer');
    assert.equal((await patch(owner.token, 999_999, 'admin')).status, 404);

    const promoted = await patch(owner.token, member.id, 'admin');
    assert.equal(promoted.status, 200, promoted.text);
    assert.deepEqual([promoted.body.user_id, promoted.body.email, promoted.body.role], [member.id, member.email, 'admin']);
    const invite = await call(gw.url, 'POST', '/portal/org/members', { token: member.token, body: { email: 'later@example.com', role: 'member' } });
    assert.notEqual(invite.status, 403, 'the new admin may invite, as the API enforces for admins');
    assert.equal((await patch(owner.token, admin.id, 'member')).body.role, 'member');
    const stillInvite = await call(gw.url, 'POST', '/portal/org/members', { token: admin.token, body: { email: 'later2@example.com', role: 'member' } });
    assert.equal(stillInvite.status, 403, 'demoted: no longer a manager');
    const outsider = await signup(gw.url);
    assert.equal((await patch(owner.token, outsider.id, 'admin')).status, 404, 'not in this organization');
  });

  it('deletes the organization: owner only, refused while the wallet holds credit', async () => {
    const { owner, admin, member, org } = await team();
    assert.equal((await call(gw.url, 'DELETE', '/portal/org', { token: admin.token })).status, 403);
    await gw.store.collection('wallets').updateOne({ _id: `org:${org.id}` }, { $set: { balance_uc: 500_000_000 } });
    const refused = await call(gw.url, 'DELETE', '/portal/org', { token: owner.token });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'org_wallet_not_empty');
    // Money held by calls in flight is still the organization's.
    await gw.store.collection('wallets').updateOne({ _id: `org:${org.id}` }, { $set: { balance_uc: 0, held_uc: 1_000_000 } });
    assert.equal((await call(gw.url, 'DELETE', '/portal/org', { token: owner.token })).status, 409);
    await gw.store.collection('wallets').updateOne({ _id: `org:${org.id}` }, { $set: { held_uc: 999_999 } }); // less than a cent
    const del = await call(gw.url, 'DELETE', '/portal/org', { token: owner.token });
    assert.equal(del.status, 200);
    assert.deepEqual(del.body, { id: org.id, deleted: true });
    for (const u of [owner, admin, member]) assert.equal((await call(gw.url, 'GET', '/portal/org', { token: u.token })).status, 404);
    // Everyone is free to join or found another organization.
    assert.equal((await call(gw.url, 'POST', '/portal/org', { token: member.token, body: { name: 'Next' } })).status, 201);
  });
});
