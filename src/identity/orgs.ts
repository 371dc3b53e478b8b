// Organizations: one wallet shared by members with roles owner, admin and member. A user belongs to
// at most one organization: the membership document's _id is the user id, so the store's _id
// uniqueness enforces it even under concurrent acceptances. Users join only by accepting an
// invitation (src/identity/invitations.ts) or by creating an organization. The wallet is billing's:
// opened, read and closed through AccountWallets.
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import { isDuplicateKeyError, type Store } from '../store/port.ts';
import type { AccountService, UserDoc } from './accounts.ts';
import type { InvitationRecords } from './invitation-records.ts';
import type { AccountWallets } from './account-wallets.ts';
import { nextId, type Clock } from '../shared/common.ts';

export type OrgRole = 'owner' | 'admin' | 'member';

export interface OrgDoc {
  _id: number;
  name: string;
  owner_id: number;
  created_at: Date;
  [k: string]: unknown;
}

export interface MembershipDoc {
  _id: number; // user id
  org_id: number;
  role: OrgRole;
  joined_at: Date;
  /** The invitation accepted to join (absent for the creator). */
  invitation_id?: number;
  [k: string]: unknown;
}

export interface PublicOrg {
  id: number;
  name: string;
  wallet_cents: number;
  created_at: string;
  role?: OrgRole;
}

export interface PublicMember {
  user_id: number;
  email: string;
  role: OrgRole;
  joined_at: string;
}

const MANAGERS: readonly OrgRole[] = ['owner', 'admin'];

export class OrgService {
  private readonly orgs;
  private readonly members;

  constructor(
    private readonly store: Store,
    private readonly accounts: AccountService,
    private readonly config: Config['orgs'],
    private readonly invitations: InvitationRecords,
    private readonly wallets: AccountWallets,
    private readonly now: Clock,
  ) {
    this.orgs = store.collection<OrgDoc>('orgs');
    this.members = store.collection<MembershipDoc>('memberships');
  }

  async init(): Promise<void> {
    await this.members.createIndex({ keys: { org_id: 1, joined_at: 1 } });
  }

  /** The caller's membership, or null. */
  async membershipOf(userId: number): Promise<MembershipDoc | null> {
    return this.members.findOne({ _id: userId });
  }

  private async requireMembership(userId: number): Promise<MembershipDoc> {
    const m = await this.membershipOf(userId);
    if (!m) throw new ApiError('not_found', 'You do not belong to an organization.');
    return m;
  }

  /** The caller's membership when they are the owner or an admin: 403 otherwise, 404 in no organization. */
  async requireManager(userId: number, action: string): Promise<MembershipDoc> {
    const me = await this.requireMembership(userId);
    if (!MANAGERS.includes(me.role)) throw new ApiError('role_forbidden', `Only the owner or an admin can ${action}.`);
    return me;
  }

  findOrg(orgId: number): Promise<OrgDoc | null> {
    return this.orgs.findOne({ _id: orgId });
  }

  /** 409 `conflict` once the organization has its maximum number of members. */
  async assertRoom(orgId: number): Promise<void> {
    const count = await this.members.countDocuments({ org_id: orgId });
    if (count >= this.config.maxMembers) throw new ApiError('conflict', `The organization has reached its ${this.config.maxMembers}-member limit.`);
  }

  /** Makes the user a member: 409 `already_in_org` when they belong to one (also when racing to). */
  async join(userId: number, orgId: number, role: OrgRole, invitationId: number): Promise<void> {
    await this.assertRoom(orgId);
    await this.insertMember({ _id: userId, org_id: orgId, role, joined_at: new Date(this.now()), invitation_id: invitationId });
  }

  /** The membership's _id uniqueness is the guard against a concurrent create or acceptance. */
  private async insertMember(doc: MembershipDoc): Promise<void> {
    try {
      await this.members.insertOne(doc);
    } catch (err) {
      if (isDuplicateKeyError(err)) throw new ApiError('already_in_org', 'You already belong to an organization; leave it first.');
      throw err;
    }
  }

  /** Undoes join() when its invitation was revoked or declined meanwhile. */
  async undoJoin(userId: number, orgId: number, invitationId: number): Promise<void> {
    await this.members.deleteOne({ _id: userId, org_id: orgId, invitation_id: invitationId });
  }

  private async view(org: OrgDoc, role?: OrgRole): Promise<PublicOrg> {
    const walletCents = await this.wallets.walletCents({ type: 'org', id: org._id });
    return {
      id: org._id,
      name: org.name,
      wallet_cents: walletCents,
      created_at: org.created_at.toISOString(),
      ...(role ? { role } : {}),
    };
  }

  async create(userId: number, name: string): Promise<PublicOrg> {
    if (await this.membershipOf(userId)) throw new ApiError('already_in_org', 'You already belong to an organization; leave it first.');
    const id = await nextId(this.store, 'orgs');
    const created = new Date(this.now());
    const org: OrgDoc = { _id: id, name, owner_id: userId, created_at: created };
    // Membership first (see insertMember).
    await this.insertMember({ _id: userId, org_id: id, role: 'owner', joined_at: created });
    await this.orgs.insertOne(org);
    await this.wallets.openWallet({ type: 'org', id }, created);
    return this.view(org, 'owner');
  }

  async get(userId: number): Promise<PublicOrg> {
    const m = await this.requireMembership(userId);
    const org = await this.orgs.findOne({ _id: m.org_id });
    if (!org) throw new ApiError('not_found', 'You do not belong to an organization.');
    return this.view(org, m.role);
  }

  async listMembers(userId: number): Promise<PublicMember[]> {
    const me = await this.requireMembership(userId);
    const rows = await this.members.find({ org_id: me.org_id }, { sort: { joined_at: 1 }, limit: this.config.maxMembers });
    const users = await Promise.all(rows.map((m) => this.accounts.getUser(m._id)));
    return rows.map((m, i) => ({
      user_id: m._id,
      email: (users[i] as UserDoc | null)?.email ?? '',
      role: m.role,
      joined_at: m.joined_at.toISOString(),
    }));
  }

  /** Owner removes anyone but themself; an admin removes members (not the owner, not other admins). */
  async remove(userId: number, targetId: number): Promise<{ user_id: number; removed: true }> {
    const me = await this.requireManager(userId, 'remove members');
    const target = await this.members.findOne({ _id: targetId, org_id: me.org_id });
    if (!target) throw new ApiError('not_found', 'No such member in your organization.');
    if (target.role === 'owner') {
      throw targetId === userId
        ? new ApiError('owner_cannot_leave', 'The owner cannot be removed; transfer ownership or delete the organization first.')
        : new ApiError('role_forbidden', 'The owner cannot be removed.');
    }
    if (me.role === 'admin' && target.role === 'admin' && targetId !== userId) {
      throw new ApiError('role_forbidden', 'Only the owner can remove an admin.');
    }
    await this.members.deleteOne({ _id: targetId, org_id: me.org_id, role: target.role });
    return { user_id: targetId, removed: true };
  }

  /** The owner makes a member an admin or an admin a member (ownership moves only by transfer). */
  async setRole(userId: number, targetId: number, role: Exclude<OrgRole, 'owner'>): Promise<PublicMember> {
    const me = await this.requireMembership(userId);
    if (me.role !== 'owner') throw new ApiError('role_forbidden', "Only the owner can change members' roles.");
    const target = await this.members.findOne({ _id: targetId, org_id: me.org_id });
    if (!target) throw new ApiError('not_found', 'No such member in your organization.');
    if (target.role === 'owner') throw new ApiError('role_forbidden', "The owner's role changes only by transferring ownership (POST /portal/org/transfer).");
    // Conditional on the member still being a non-owner of this organization (a transfer may race).
    const updated = await this.members.findOneAndUpdate(
      { _id: targetId, org_id: me.org_id, role: { $ne: 'owner' } },
      { $set: { role } },
      { returnDocument: 'after' },
    );
    if (!updated) throw new ApiError('not_found', 'No such member in your organization.');
    const user = await this.accounts.getUser(targetId);
    return { user_id: targetId, email: user?.email ?? '', role: updated.role, joined_at: updated.joined_at.toISOString() };
  }

  async leave(userId: number): Promise<{ org_id: number; left: true }> {
    const me = await this.requireMembership(userId);
    if (me.role === 'owner') {
      throw new ApiError('owner_cannot_leave', 'The owner cannot leave the organization; transfer ownership (POST /portal/org/transfer) or delete it first.');
    }
    await this.members.deleteOne({ _id: userId, org_id: me.org_id });
    return { org_id: me.org_id, left: true };
  }

  async transfer(userId: number, targetId: number): Promise<PublicOrg> {
    const me = await this.requireMembership(userId);
    if (me.role !== 'owner') throw new ApiError('role_forbidden', 'Only the owner can transfer ownership.');
    if (targetId === userId) throw new ApiError('invalid_request', 'You already own this organization.', { param: 'user_id' });
    const target = await this.members.findOne({ _id: targetId, org_id: me.org_id });
    if (!target) throw new ApiError('not_found', 'No such member in your organization.', { param: 'user_id' });
    // Promote first, then demote: a crash between the two leaves two owners, never none.
    await this.members.updateOne({ _id: targetId, org_id: me.org_id }, { $set: { role: 'owner' } });
    await this.orgs.updateOne({ _id: me.org_id }, { $set: { owner_id: targetId } });
    await this.members.updateOne({ _id: userId, org_id: me.org_id }, { $set: { role: 'admin' } });
    return this.get(userId);
  }

  async delete(userId: number): Promise<{ id: number; deleted: true }> {
    const me = await this.requireMembership(userId);
    if (me.role !== 'owner') throw new ApiError('role_forbidden', 'Only the owner can delete the organization.');
    // Calls in flight count: their holds are still the organization's money.
    const cents = await this.wallets.walletCents({ type: 'org', id: me.org_id });
    if (cents >= 1) {
      throw new ApiError('org_wallet_not_empty', `The organization wallet still holds ${cents} cents; spend or settle it before deleting the organization.`);
    }
    // Invitations first: an acceptance racing this either finds its invitation revoked (and undoes
    // its membership) or joined before the members are deleted below.
    await this.invitations.revokeAllOf(me.org_id);
    await this.members.deleteMany({ org_id: me.org_id });
    await this.orgs.deleteOne({ _id: me.org_id });
    await this.wallets.closeWallet({ type: 'org', id: me.org_id });
    return { id: me.org_id, deleted: true };
  }
}
