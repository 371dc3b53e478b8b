// What other modules may ask identity about people. Identity owns `users` (accounts.ts), `orgs` and
// `memberships` (orgs.ts); billing asks here who pays for a user's calls (their membership), whose
// KYC counts (an organization's owner), whether an account exists, and records an operator's KYC
// decision. Each answer is its owner's own point read by `_id`, the read billing made when it read
// these collections itself: the chat path's payer resolution costs the reads it did.
// `noIdentity` is the noop (nobody exists): for tools that build billing for usage alone.
import type { AccountService } from './accounts.ts';
import type { OrgRole, OrgService } from './orgs.ts';

export interface Membership {
  orgId: number;
  role: OrgRole;
}

export interface IdentityDirectory {
  /** The organization the user belongs to and their role in it, or null (one read of `memberships`). */
  membershipOf(userId: number): Promise<Membership | null>;
  /** The organization's owner, or null when there is no such organization (one read of `orgs`). */
  orgOwner(orgId: number): Promise<number | null>;
  /** Whether the user completed identity verification; false for no such user (one read of `users`). */
  kycOf(userId: number): Promise<boolean>;
  /** Whether the user or organization exists. */
  exists(owner: { type: 'user' | 'org'; id: number }): Promise<boolean>;
  /** Records the user's verification; resolves to it as stored, or null when there is no such user. */
  setKyc(userId: number, verified: boolean): Promise<boolean | null>;
}

export function identityDirectory(accounts: Pick<AccountService, 'getUser' | 'setKyc'>, orgs: Pick<OrgService, 'membershipOf' | 'findOrg'>): IdentityDirectory {
  return {
    async membershipOf(userId) {
      const m = await orgs.membershipOf(userId);
      return m ? { orgId: m.org_id, role: m.role } : null;
    },
    async orgOwner(orgId) {
      return (await orgs.findOrg(orgId))?.owner_id ?? null;
    },
    async kycOf(userId) {
      return (await accounts.getUser(userId))?.kyc_verified === true;
    },
    async exists(owner) {
      return (owner.type === 'user' ? await accounts.getUser(owner.id) : await orgs.findOrg(owner.id)) !== null;
    },
    async setKyc(userId, verified) {
      const u = await accounts.setKyc(userId, verified);
      return u ? u.kyc_verified === true : null;
    },
  };
}

export const noIdentity: IdentityDirectory = {
  membershipOf: async () => null,
  orgOwner: async () => null,
  kycOf: async () => false,
  exists: async () => false,
  setKyc: async () => null,
};
