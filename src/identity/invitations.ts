// Organization invitations: the only way into an organization one did not create. An owner or
// admin invites an e-mail; the account behind it accepts or declines. The inviter's answer is the
// same whether the e-mail has an account, is in an organization or is free, and costs the same store
// work in each case, so inviting reveals nothing about other people's accounts.
import type { Config } from '../config.ts';
import { ApiError } from '../errors.ts';
import type { Store } from '../store/port.ts';
import { parseEmail, type AccountService } from './accounts.ts';
import { tooManyRequests, WindowCounters, type Clock } from '../shared/common.ts';
import type { InvitationDoc, InvitationRecords, InvitedRole } from './invitation-records.ts';
import type { OrgService, PublicOrg } from './orgs.ts';

/** What the inviting organization sees. */
export interface PublicInvitation {
  id: number;
  email: string;
  role: InvitedRole;
  status: 'pending';
  expires_at: string;
  created_at: string;
}

/** What the invitee sees. */
export interface ReceivedInvitation {
  id: number;
  org_id: number;
  org_name: string;
  role: InvitedRole;
  inviter_email: string;
  expires_at: string;
  created_at: string;
}

/** The invitee's list shows the oldest this many. */
const RECEIVED_LIMIT = 100;
const HOUR = 3600;
const DAY = 86_400;

export class InvitationService {
  private readonly windows: WindowCounters;

  constructor(
    store: Store,
    private readonly records: InvitationRecords,
    private readonly orgs: OrgService,
    private readonly accounts: AccountService,
    private readonly config: Config['orgs']['invitations'],
    private readonly now: Clock,
  ) {
    this.windows = new WindowCounters(store.collection('invitation_windows'), now);
  }

  async init(): Promise<void> {
    await this.records.init();
    await this.windows.init();
  }

  /**
   * Invites `emailIn` into the caller's organization: a pending invitation, the same one while it is
   * pending. Nothing here depends on whether the e-mail has an account beyond the `user_id` stored.
   */
  async invite(inviter: { id: number; email: string }, emailIn: string, role: InvitedRole | 'owner'): Promise<PublicInvitation> {
    const me = await this.orgs.requireManager(inviter.id, 'invite members');
    if (role === 'owner') {
      throw new ApiError('invalid_request', "role must be 'admin' or 'member'; use POST /portal/org/transfer to change the owner.", { param: 'role' });
    }
    const email = parseEmail(emailIn);
    const pending = await this.records.pendingTo(me.org_id, email);
    if (pending) return publicInvitation(pending);
    await this.orgs.assertRoom(me.org_id);
    if ((await this.records.countOpenOf(me.org_id)) >= this.config.maxPendingPerOrg) {
      throw new ApiError(
        'conflict',
        `The organization has ${this.config.maxPendingPerOrg} pending invitations, the most it may have; revoke some or wait for answers.`,
      );
    }
    await this.limit(me.org_id, inviter.id);
    const [target, org] = await Promise.all([this.accounts.findByEmail(email), this.orgs.findOrg(me.org_id)]);
    const doc = await this.records.create({
      org_id: me.org_id,
      org_name: org?.name ?? '',
      email,
      user_id: target?._id ?? null,
      role,
      invited_by: inviter.id,
      inviter_email: inviter.email,
    });
    return publicInvitation(doc);
  }

  /**
   * Per hour and per day, for the organization and for the inviter (who may move between
   * organizations). A refused attempt takes its hits back, so hammering does not use up the day.
   */
  private async limit(orgId: number, userId: number): Promise<void> {
    const { perHour, perDay } = this.config;
    const checks = [
      { key: `org:${orgId}`, period: HOUR, max: perHour },
      { key: `user:${userId}`, period: HOUR, max: perHour },
      { key: `org:${orgId}`, period: DAY, max: perDay },
      { key: `user:${userId}`, period: DAY, max: perDay },
    ];
    const hits = await Promise.all(checks.map((c) => this.windows.hit(c.key, c.period)));
    const over = hits.filter((h, i) => h.count > checks[i]!.max);
    if (over.length === 0) return;
    await Promise.all(checks.map((c) => this.windows.hit(c.key, c.period, -1)));
    throw tooManyRequests(Math.max(...over.map((h) => h.resetAt)), this.now(), 'Too many invitations');
  }

  async listOfOrg(userId: number): Promise<PublicInvitation[]> {
    const me = await this.orgs.requireManager(userId, 'list invitations');
    return (await this.records.listOpenOf(me.org_id, this.config.maxPendingPerOrg)).map(publicInvitation);
  }

  async revoke(userId: number, id: number): Promise<{ id: number; revoked: true }> {
    const me = await this.orgs.requireManager(userId, 'revoke invitations');
    if (!(await this.records.revoke(id, me.org_id))) throw notFound();
    return { id, revoked: true };
  }

  /** Pending, unexpired invitations addressed to the caller, oldest first. */
  async received(userId: number): Promise<ReceivedInvitation[]> {
    const docs = await this.records.listOpenFor(userId, RECEIVED_LIMIT);
    return docs.map((d) => ({
      id: d._id,
      org_id: d.org_id,
      org_name: d.org_name,
      role: d.role,
      inviter_email: d.inviter_email,
      expires_at: d.expires_at.toISOString(),
      created_at: d.created_at.toISOString(),
    }));
  }

  /**
   * Joins the inviting organization. The membership is written first (its uniqueness keeps a user in
   * one organization), then the invitation is claimed; when the claim loses to a revoke or decline,
   * the membership is undone and the answer is what the invitation now is.
   */
  async accept(userId: number, id: number): Promise<PublicOrg> {
    const inv = this.open(await this.records.addressedTo(id, userId));
    await this.orgs.join(userId, inv.org_id, inv.role, inv._id);
    if (!(await this.records.decide(id, userId, 'accepted'))) {
      await this.orgs.undoJoin(userId, inv.org_id, inv._id);
      this.open(await this.records.addressedTo(id, userId));
      throw notFound();
    }
    return this.orgs.get(userId);
  }

  async decline(userId: number, id: number): Promise<{ id: number; status: 'declined' }> {
    if (!(await this.records.decide(id, userId, 'declined'))) {
      this.open(await this.records.addressedTo(id, userId));
      throw notFound();
    }
    return { id, status: 'declined' };
  }

  /** The invitation when it can still be answered: 404 when absent, not the caller's or decided; 410 when expired. */
  private open(inv: InvitationDoc | null): InvitationDoc {
    if (inv?.status !== 'pending') throw notFound();
    if (inv.expires_at.getTime() <= this.now()) throw new ApiError('invitation_expired', 'This invitation has expired; ask for a new one.');
    return inv;
  }
}

function notFound(): ApiError {
  return new ApiError('not_found', 'No such invitation.');
}

function publicInvitation(d: InvitationDoc): PublicInvitation {
  return { id: d._id, email: d.email, role: d.role, status: 'pending', expires_at: d.expires_at.toISOString(), created_at: d.created_at.toISOString() };
}
