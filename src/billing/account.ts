// The account a user's calls are paid from and their portal views show: their organization's while
// they belong to one, else their own; and whether it may call models that require KYC. Asked of
// identity (src/identity/directory.ts, which owns memberships, organizations' owners and KYC) by the
// metered boundary (BillingService.payerFor) and the portal (BillingPortal) alike.
import type { OrgRole } from '../identity/orgs.ts';
import type { IdentityDirectory } from '../identity/directory.ts';
import { walletIdOf, type OwnerType } from './money.ts';

/** The caller's account for portal views: their organization while they belong to one, else their own. */
export interface Account {
  ownerType: OwnerType;
  ownerId: number;
  walletId: string;
  role: OrgRole | null;
}

export async function accountOf(identity: IdentityDirectory, userId: number): Promise<Account> {
  const m = await identity.membershipOf(userId);
  return m
    ? { ownerType: 'org', ownerId: m.orgId, walletId: walletIdOf('org', m.orgId), role: m.role }
    : { ownerType: 'user', ownerId: userId, walletId: walletIdOf('user', userId), role: null };
}

/** KYC: the user's own verification, or for an organization its owner's. */
export async function kycVerified(identity: IdentityDirectory, acc: Account, userId: number): Promise<boolean> {
  const verifiedId = acc.ownerType === 'org' ? await identity.orgOwner(acc.ownerId) : userId;
  return verifiedId !== null && (await identity.kycOf(verifiedId));
}
