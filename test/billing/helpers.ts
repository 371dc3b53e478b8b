// Billing tests' fixtures: the real embedded store in a temp dir, billing instances on it with a
// hand-moved clock and a recording event sink, and accounts written straight into the store (billing
// reads them through identity's directory over the same store).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.ts';
import { BillingService, type BillingConfig, type BillingDeps } from '../../src/billing/service.ts';
import { BillingPortal } from '../../src/billing/portal.ts';
import { walletIdOf } from '../../src/billing/money.ts';
import { noAccountWallets } from '../../src/identity/account-wallets.ts';
import { AccountService } from '../../src/identity/accounts.ts';
import { identityDirectory } from '../../src/identity/directory.ts';
import { InvitationRecords } from '../../src/identity/invitation-records.ts';
import { OrgService } from '../../src/identity/orgs.ts';
import type { Payer } from '../../src/billing/types.ts';
import type { AccountEvent } from '../../src/shared/events.ts';
import type { ApiKeyPrincipal } from '../../src/identity/keys.ts';
import { openEmbeddedStore } from '../../src/store/embedded/store.ts';
import type { Store } from '../../src/store/port.ts';

export interface Clock {
  t: number;
  now: () => number;
}

export interface Fixture {
  store: Store;
  clock: Clock;
  events: AccountEvent[];
  errors: unknown[];
  /** A billing instance on the shared store (as another gateway process would be). */
  billing(overrides?: Partial<BillingConfig>, deps?: Partial<BillingDeps>): Promise<TestBilling>;
  close(): Promise<void>;
}

/** A billing instance with its portal's operations on it, as the tests call both on one object. */
export type TestBilling = BillingService & Omit<BillingPortal, 'accountOf'>;

function withPortal(b: BillingService, portal: BillingPortal): TestBilling {
  return Object.assign(b, {
    walletView: portal.walletView.bind(portal),
    setLowBalanceThreshold: portal.setLowBalanceThreshold.bind(portal),
    usageSummary: portal.usageSummary.bind(portal),
    usageRecords: portal.usageRecords.bind(portal),
    topupsOf: portal.topupsOf.bind(portal),
    topupList: portal.topupList.bind(portal),
    subscriptionView: portal.subscriptionView.bind(portal),
    topup: portal.topup.bind(portal),
    setSubscription: portal.setSubscription.bind(portal),
    setKyc: portal.setKyc.bind(portal),
  });
}

export function billingConfig(overrides: Partial<BillingConfig> = {}): BillingConfig {
  return { ...loadConfig({}).billing, ...overrides };
}

export async function fixture(start = Date.UTC(2026, 0, 15, 12, 0, 0)): Promise<Fixture> {
  const dir = await mkdtemp(join(tmpdir(), 'billing-test-'));
  const store = await openEmbeddedStore({ dir });
  const clock: Clock = { t: start, now: () => clock.t };
  const events: AccountEvent[] = [];
  const errors: unknown[] = [];
  const instances: BillingService[] = [];
  const config = loadConfig({});
  const accounts = new AccountService(store, config.auth, noAccountWallets, clock.now);
  const orgs = new OrgService(store, accounts, config.orgs, new InvitationRecords(store, 0, clock.now), noAccountWallets, clock.now);
  const identity = identityDirectory(accounts, orgs);
  return {
    store,
    clock,
    events,
    errors,
    async billing(overrides = {}, deps = {}) {
      const b = new BillingService({
        store,
        identity,
        config: billingConfig(overrides),
        events: { emit: async (e) => void events.push(e) },
        now: clock.now,
        onError: (err) => errors.push(err),
        ...deps,
      });
      await b.init();
      instances.push(b);
      return withPortal(b, new BillingPortal({ billing: b, identity, now: clock.now }));
    },
    async close() {
      for (const b of instances) await b.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

let nextId = 1000;

/** A user (with a personal wallet) written straight into the store. */
export async function user(store: Store, opts: { kyc?: boolean } = {}): Promise<number> {
  const id = nextId++;
  await store
    .collection('users')
    .insertOne({ _id: id, email: `u${id}@example.com`, password_hash: 'x', created_at: new Date(0), kyc_verified: opts.kyc ?? false });
  await store
    .collection('wallets')
    .insertOne({ _id: walletIdOf('user', id), owner_type: 'user', owner_id: id, balance_uc: 0, held_uc: 0, created_at: new Date(0) });
  return id;
}

/** An organization owned by `owner`, with `members` (role member) and its wallet. */
export async function org(store: Store, owner: number, members: number[] = []): Promise<number> {
  const id = nextId++;
  await store.collection('orgs').insertOne({ _id: id, name: `org${id}`, owner_id: owner, created_at: new Date(0) });
  await store.collection('memberships').insertOne({ _id: owner, org_id: id, role: 'owner', joined_at: new Date(0) });
  for (const m of members) await store.collection('memberships').insertOne({ _id: m, org_id: id, role: 'member', joined_at: new Date(0) });
  await store
    .collection('wallets')
    .insertOne({ _id: walletIdOf('org', id), owner_type: 'org', owner_id: id, balance_uc: 0, held_uc: 0, created_at: new Date(0) });
  return id;
}

export function principal(
  userId: number,
  opts: { keyId?: number; rpm?: number | null; tpd?: number | null; cpd?: number | null; cpm?: number | null } = {},
): ApiKeyPrincipal {
  const keyId = opts.keyId ?? nextId++;
  return {
    keyId,
    jti: `jti${keyId}`,
    prefix: `sk-live-${String(keyId).padStart(12, '0')}`,
    userId,
    scopes: ['*'],
    rpm: opts.rpm ?? null,
    tpd: opts.tpd ?? null,
    cpd: opts.cpd ?? null,
    cpm: opts.cpm ?? null,
  };
}

/** Sets a wallet's spendable balance directly (µ¢). */
export async function fund(store: Store, walletId: string, uc: number): Promise<void> {
  await store.collection('wallets').updateOne({ _id: walletId }, { $set: { balance_uc: uc } });
}

export async function walletOf(store: Store, walletId: string): Promise<Record<string, any>> {
  const w = await store.collection('wallets').findOne({ _id: walletId });
  if (!w) throw new Error(`no wallet ${walletId}`);
  return w;
}

export const facts = (cost: number, extra: Record<string, unknown> = {}) => ({
  requestId: `req_${nextId++}`,
  model: 'm1',
  modelType: 'llm',
  route: 'm1#0',
  promptTokens: 10,
  completionTokens: 5,
  costMicrocents: cost,
  status: 'ok' as const,
  latencyMs: 12,
  ...extra,
});

/** One metered call: hold an estimate, settle a cost. */
export async function call(b: BillingService, payer: Payer, estimate: number, cost: number, extra: Record<string, unknown> = {}): Promise<void> {
  const hold = await b.hold(payer, estimate, 'req');
  await b.settle(hold, payer, facts(cost, extra));
}

/** Two billing instances on the fixture's store (two gateway processes), and a funded user's key with `limits`. */
export async function limitedKey(fx: Fixture, limits: Parameters<typeof principal>[1]) {
  const [b1, b2] = [await fx.billing(), await fx.billing()];
  const u = await user(fx.store);
  const p = principal(u, limits);
  const payer = await b1.payerFor(p);
  await fund(fx.store, payer.walletId, 1e9);
  return { b1, b2, u, p, payer };
}
