// What accounts and organizations ask billing of their wallets. Billing owns the `wallets`
// collection; identity (src/identity/accounts.ts, orgs.ts) opens a wallet when a user signs up or an
// organization is created, shows an organization's balance, and closes its wallet when it is deleted,
// through this interface, which BillingService implements (src/billing/service.ts). Identity
// declares it, as the port it needs, so identity imports nothing of billing (billing asks identity
// about people through src/identity/directory.ts). `noAccountWallets` is the noop (tests of
// identity alone).

export interface WalletOwner {
  type: 'user' | 'org';
  id: number;
}

export interface AccountWallets {
  /** Opens the owner's wallet, empty, created as of `at`; a no-op when it exists. */
  openWallet(owner: WalletOwner, at: Date): Promise<void>;
  /** The wallet's whole cents, what calls in flight hold included; 0 when there is no wallet. */
  walletCents(owner: WalletOwner): Promise<number>;
  /** Marks the wallet closed (its organization was deleted). */
  closeWallet(owner: WalletOwner): Promise<void>;
}

export const noAccountWallets: AccountWallets = {
  openWallet: async () => {},
  walletCents: async () => 0,
  closeWallet: async () => {},
};
