// Organization invitations as documents (collection `org_invitations`). An invitation is addressed to
// the account its e-mail named when it was made, or to none (then nobody can ever accept it). Expiry
// is compared in every query; nothing relies on a TTL sweep. While pending, `pending_key`
// (org + e-mail) sits in a unique sparse index: re-inviting the same e-mail finds the same invitation,
// also when two requests race; deciding an invitation removes the key.
import { isDuplicateKeyError, type Store } from '../store/port.ts';
import { nextId, type Clock } from '../shared/common.ts';

export type InvitationStatus = 'pending' | 'accepted' | 'declined' | 'revoked' | 'expired';
export type InvitedRole = 'admin' | 'member';

export interface InvitationDoc {
  _id: number;
  org_id: number;
  /** Names kept from when it was made, for the invitee's list (neither changes). */
  org_name: string;
  email: string;
  /** The account `email` named when the invitation was made; null when none did. */
  user_id: number | null;
  role: InvitedRole;
  invited_by: number;
  inviter_email: string;
  status: InvitationStatus;
  pending_key?: string;
  created_at: Date;
  expires_at: Date;
  decided_at?: Date;
  [k: string]: unknown;
}

export type NewInvitation = Pick<InvitationDoc, 'org_id' | 'org_name' | 'email' | 'user_id' | 'role' | 'invited_by' | 'inviter_email'>;

const pendingKey = (orgId: number, email: string): string => `${orgId}:${email}`;

export class InvitationRecords {
  private readonly docs;

  constructor(
    private readonly store: Store,
    private readonly ttlMs: number,
    private readonly now: Clock,
  ) {
    this.docs = store.collection<InvitationDoc>('org_invitations');
  }

  async init(): Promise<void> {
    await this.docs.createIndex({ keys: { pending_key: 1 }, unique: true, sparse: true });
    await this.docs.createIndex({ keys: { org_id: 1, status: 1, created_at: 1 } });
    await this.docs.createIndex({ keys: { user_id: 1, status: 1, created_at: 1 } });
  }

  private open(): { status: 'pending'; expires_at: { $gt: Date } } {
    return { status: 'pending', expires_at: { $gt: new Date(this.now()) } };
  }

  /** The unexpired pending invitation of `orgId` to `email`, or null (an expired one is retired). */
  async pendingTo(orgId: number, email: string): Promise<InvitationDoc | null> {
    const key = pendingKey(orgId, email);
    const doc = await this.docs.findOne({ pending_key: key });
    if (!doc || doc.expires_at.getTime() > this.now()) return doc;
    await this.docs.updateOne({ _id: doc._id, pending_key: key }, this.close('expired'));
    return null;
  }

  /** Stores a new pending invitation; when a concurrent request stored the same one first, returns that. */
  async create(fields: NewInvitation): Promise<InvitationDoc> {
    const created = new Date(this.now());
    const key = pendingKey(fields.org_id, fields.email);
    const doc: InvitationDoc = {
      _id: await nextId(this.store, 'org_invitations'),
      ...fields,
      status: 'pending',
      pending_key: key,
      created_at: created,
      expires_at: new Date(created.getTime() + this.ttlMs),
    };
    try {
      await this.docs.insertOne(doc);
      return doc;
    } catch (err) {
      const winner = isDuplicateKeyError(err) ? await this.docs.findOne({ pending_key: key }) : null;
      if (winner) return winner;
      throw err;
    }
  }

  countOpenOf(orgId: number): Promise<number> {
    return this.docs.countDocuments({ org_id: orgId, ...this.open() });
  }

  listOpenOf(orgId: number, limit: number): Promise<InvitationDoc[]> {
    return this.docs.find({ org_id: orgId, ...this.open() }, { sort: { created_at: 1 }, limit });
  }

  listOpenFor(userId: number, limit: number): Promise<InvitationDoc[]> {
    return this.docs.find({ user_id: userId, ...this.open() }, { sort: { created_at: 1 }, limit });
  }

  /** The invitation `id` if it is addressed to `userId` (whatever its status), else null. */
  addressedTo(id: number, userId: number): Promise<InvitationDoc | null> {
    return this.docs.findOne({ _id: id, user_id: userId });
  }

  /** Accepts or declines a pending, unexpired invitation addressed to `userId`, atomically; false when there is none. */
  async decide(id: number, userId: number, status: 'accepted' | 'declined'): Promise<boolean> {
    const res = await this.docs.updateOne({ _id: id, user_id: userId, ...this.open() }, this.close(status));
    return res.matchedCount === 1;
  }

  /** Revokes a pending invitation of `orgId` (expired or not); false when there is none. */
  async revoke(id: number, orgId: number): Promise<boolean> {
    const res = await this.docs.updateOne({ _id: id, org_id: orgId, status: 'pending' }, this.close('revoked'));
    return res.matchedCount === 1;
  }

  /** Revokes every pending invitation of an organization (it is being deleted). */
  async revokeAllOf(orgId: number): Promise<void> {
    await this.docs.updateMany({ org_id: orgId, status: 'pending' }, this.close('revoked'));
  }

  private close(status: Exclude<InvitationStatus, 'pending'>): Record<string, unknown> {
    return { $set: { status, decided_at: new Date(this.now()) }, $unset: { pending_key: '' } };
  }
}
