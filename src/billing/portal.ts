// The billing portal: what the portal and the operators' /admin endpoints ask of billing beside the
// metered boundary (src/billing/service.ts): the signed-in user's wallet, billing settings, usage
// summaries and records, top-ups and subscription; and the operators' manual top-ups, subscriptions
// and KYC. Built on the billing service's wallets, usage log, top-ups and subscriptions (which that
// service opens, sweeps and closes) and on identity's directory; it holds no state of its own.
import type { UsageGroupRow, UsageRow } from './usage-views.ts';
import { ApiError } from '../errors.ts';
import type { Clock } from '../shared/common.ts';
import type { IdentityDirectory } from '../identity/directory.ts';
import { accountOf, kycVerified, type Account } from './account.ts';
import { floorCents, MICROCENTS_PER_CENT, utcDay, walletIdOf, walletTotalUc, type OwnerType } from './money.ts';
import type { SubscriptionView } from './subscriptions.ts';
import { topupView, type TopupView } from './topups.ts';
import { DEFAULT_PAGE_LIMIT, type Page, type PageQuery } from '../shared/pages.ts';
import { groupField, type GroupBy, type Totals, type UsageRecordDoc, type UsageScope } from './usage.ts';
import type { BillingService } from './service.ts';

export interface BillingPortalDeps {
  /** The billing service whose wallets, usage, top-ups and subscriptions the portal reads and credits. */
  billing: Pick<BillingService, 'wallets' | 'usage' | 'topups' | 'subscriptions'>;
  /** People: memberships (whose account), organizations' owners, KYC. Identity owns them. */
  identity: IdentityDirectory;
  now: Clock;
}

export interface WalletView {
  owner_type: OwnerType;
  owner_id: number;
  balance_cents: number;
  available_cents: number;
  held_cents: number;
  balance_microcents: number;
  low_balance_threshold_cents: number;
  /** Whether the account may call models with requires_kyc (the user's verification, or the organization owner's). */
  kyc_verified: boolean;
}

export interface UsageRecordView {
  id: string;
  created_at: string;
  request_id: string;
  owner_type: OwnerType;
  owner_id: number;
  user_id: number;
  key_prefix: string;
  model: string;
  route: string | null;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  seconds: number | null;
  characters: number | null;
  calls: number | null;
  cost_microcents: number;
  cost_cents: number;
  status: string;
  latency_ms: number;
  end_user: string | null;
  cached_tokens: number | null;
}

const DAY_MS = 86_400_000;
const MAX_RANGE_DAYS = 366;
const DAY_RE = /^\d{4}-\d{2}-\d{2}$/;

function usageRow(t: Totals): UsageRow {
  return {
    requests: t.requests,
    errors: t.errors,
    prompt_tokens: t.prompt_tokens,
    completion_tokens: t.completion_tokens,
    total_tokens: t.prompt_tokens + t.completion_tokens,
    seconds: t.seconds,
    characters: t.characters,
    calls: t.calls,
    cost_microcents: t.cost_uc,
    cost_cents: t.cost_uc / MICROCENTS_PER_CENT,
  };
}

function recordView(r: UsageRecordDoc): UsageRecordView {
  return {
    id: r._id,
    created_at: r.ts.toISOString(),
    request_id: r.request_id,
    owner_type: r.owner_type,
    owner_id: r.owner_id,
    user_id: r.user_id,
    key_prefix: r.key_prefix,
    model: r.model,
    route: r.route,
    prompt_tokens: r.prompt_tokens ?? null,
    completion_tokens: r.completion_tokens ?? null,
    seconds: r.seconds ?? null,
    characters: r.characters ?? null,
    calls: r.calls ?? null,
    cost_microcents: r.cost_uc,
    cost_cents: r.cost_uc / MICROCENTS_PER_CENT,
    status: r.status,
    latency_ms: r.latency_ms,
    end_user: r.end_user ?? null,
    cached_tokens: r.cached_tokens ?? null,
  };
}

export class BillingPortal {
  private readonly wallets: BillingService['wallets'];
  private readonly usage: BillingService['usage'];
  private readonly topups: BillingService['topups'];
  private readonly subscriptions: BillingService['subscriptions'];
  private readonly identity: IdentityDirectory;
  private readonly now: Clock;

  constructor(deps: BillingPortalDeps) {
    this.wallets = deps.billing.wallets;
    this.usage = deps.billing.usage;
    this.topups = deps.billing.topups;
    this.subscriptions = deps.billing.subscriptions;
    this.identity = deps.identity;
    this.now = deps.now;
  }

  /** The caller's account (see account.ts). */
  private accountOf(userId: number): Promise<Account> {
    return accountOf(this.identity, userId);
  }

  // ---- the portal: the signed-in user's account ----

  /** `balance_cents` counts what calls in flight hold; `available_cents` is what new calls can use. */
  async walletView(userId: number): Promise<WalletView> {
    const acc = await this.accountOf(userId);
    const w = await this.wallets.get(acc.walletId);
    const total = walletTotalUc(w);
    const balance = floorCents(total);
    const available = floorCents(w?.balance_uc ?? 0);
    return {
      owner_type: acc.ownerType,
      owner_id: acc.ownerId,
      balance_cents: balance,
      available_cents: available,
      held_cents: balance - available,
      balance_microcents: total,
      low_balance_threshold_cents: w?.low_balance_threshold_cents ?? 0,
      kyc_verified: await kycVerified(this.identity, acc, userId),
    };
  }

  async setLowBalanceThreshold(userId: number, cents: number): Promise<{ owner_type: OwnerType; owner_id: number; low_balance_threshold_cents: number }> {
    const acc = await this.accountOf(userId);
    if (acc.role !== null && acc.role !== 'owner') throw new ApiError('role_forbidden', "Only the organization's owner manages its billing settings.");
    const w = await this.wallets.setThreshold(acc.walletId, cents);
    if (!w) throw new ApiError('not_found', 'Your wallet does not exist.');
    return { owner_type: acc.ownerType, owner_id: acc.ownerId, low_balance_threshold_cents: cents };
  }

  /** Members see their own usage; owners, admins and personal accounts see the whole account's. */
  private scopeOf(acc: Account, userId: number): UsageScope {
    return acc.role === 'member' ? { owner: acc.walletId, userId } : { owner: acc.walletId };
  }

  async usageSummary(userId: number, q: { from?: string; to?: string; group_by?: GroupBy }) {
    const to = q.to ?? utcDay(this.now());
    const toMs = parseDay(to, 'to');
    const from = q.from ?? utcDay(toMs - 29 * DAY_MS);
    const fromMs = parseDay(from, 'from');
    if (fromMs > toMs) throw new ApiError('invalid_request', 'from must not be after to.', { param: 'from' });
    if ((toMs - fromMs) / DAY_MS + 1 > MAX_RANGE_DAYS)
      throw new ApiError('invalid_request', `A range covers at most ${MAX_RANGE_DAYS} days.`, { param: 'from' });
    const groupBy = q.group_by ?? 'day';
    const acc = await this.accountOf(userId);
    const scope = this.scopeOf(acc, userId);
    const { groups, totals } = await this.usage.summary(scope, from, to, groupBy).catch((err: unknown) => {
      if (err instanceof RangeError)
        throw new ApiError('invalid_request', 'This range holds too much usage to summarize at once; narrow from/to.', { param: 'from' });
      throw err;
    });
    const field = groupField(groupBy);
    return {
      owner_type: acc.ownerType,
      owner_id: acc.ownerId,
      scope: scope.userId === undefined ? ('account' as const) : ('member' as const),
      from,
      to,
      group_by: groupBy,
      data: groups.map((g): UsageGroupRow => ({ [field]: g.key, ...usageRow(g.totals) })),
      totals: usageRow(totals),
    };
  }

  /** The caller's usage records, newest first; `from`/`to` (UTC days, inclusive) keep one range, as /portal/usage has it. */
  async usageRecords(userId: number, q: { limit?: number; after?: string; from?: string; to?: string }): Promise<Page<UsageRecordView>> {
    const fromMs = q.from !== undefined ? parseDay(q.from, 'from') : undefined;
    const untilMs = q.to !== undefined ? parseDay(q.to, 'to') + DAY_MS : undefined;
    if (fromMs !== undefined && untilMs !== undefined && fromMs >= untilMs)
      throw new ApiError('invalid_request', 'from must not be after to.', { param: 'from' });
    const acc = await this.accountOf(userId);
    const range = { ...(fromMs !== undefined ? { fromMs } : {}), ...(untilMs !== undefined ? { untilMs } : {}) };
    const page = { limit: q.limit ?? DEFAULT_PAGE_LIMIT, ...(q.after !== undefined ? { after: q.after } : {}) };
    return this.usage.page(this.scopeOf(acc, userId), page, range, recordView);
  }

  /** The top-ups of the caller's account (their organization's while they belong to one), newest first. */
  async topupsOf(userId: number, q: PageQuery<string>): Promise<Page<TopupView>> {
    return this.topups.page((await this.accountOf(userId)).walletId, q);
  }

  /** Operators: the top-ups of one account, or of all, newest first. */
  async topupList(q: PageQuery<string> & { owner?: { type: OwnerType; id: number } }): Promise<Page<TopupView>> {
    return this.topups.page(q.owner ? walletIdOf(q.owner.type, q.owner.id) : undefined, q);
  }

  async subscriptionView(userId: number): Promise<SubscriptionView> {
    const acc = await this.accountOf(userId);
    return this.subscriptions.view(acc.ownerType, acc.ownerId, await this.subscriptions.get(acc.ownerType, acc.ownerId));
  }

  // ---- admin ----

  private async requireOwner(ownerType: OwnerType, ownerId: number): Promise<void> {
    if (!(await this.identity.exists({ type: ownerType, id: ownerId })))
      throw new ApiError('not_found', `No ${ownerType === 'user' ? 'user' : 'organization'} ${ownerId}.`);
    await this.wallets.ensure(walletIdOf(ownerType, ownerId), ownerType, ownerId);
  }

  /** A confirmed manual payment. `created` is false when the reference was credited before. */
  async topup(input: { user_id?: number; org_id?: number; amount_cents: number; reference?: string }): Promise<{ topup: TopupView; created: boolean }> {
    if ((input.user_id === undefined) === (input.org_id === undefined)) {
      throw new ApiError('invalid_request', 'Give exactly one of user_id and org_id.', { param: input.user_id === undefined ? 'user_id' : 'org_id' });
    }
    const [ownerType, ownerId]: [OwnerType, number] = input.user_id !== undefined ? ['user', input.user_id] : ['org', input.org_id!];
    await this.requireOwner(ownerType, ownerId);
    const { topup, created } = await this.topups.credit({
      ownerType,
      ownerId,
      amountCents: input.amount_cents,
      kind: 'manual',
      ...(input.reference !== undefined ? { reference: input.reference } : {}),
    });
    return { topup: topupView(topup), created };
  }

  async setSubscription(ownerType: OwnerType, ownerId: number, plan: string | null): Promise<{ subscription: SubscriptionView; started: boolean }> {
    await this.requireOwner(ownerType, ownerId);
    const { sub, started } = await this.subscriptions.set(ownerType, ownerId, plan);
    return { subscription: this.subscriptions.view(ownerType, ownerId, sub), started };
  }

  async setKyc(userId: number, verified: boolean): Promise<{ user_id: number; kyc_verified: boolean }> {
    const stored = await this.identity.setKyc(userId, verified);
    if (stored === null) throw new ApiError('not_found', `No user ${userId}.`);
    return { user_id: userId, kyc_verified: stored };
  }
}

function parseDay(s: string, param: string): number {
  const ms = DAY_RE.test(s) ? Date.parse(`${s}T00:00:00Z`) : NaN;
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== s) {
    throw new ApiError('invalid_request', `${param} must be a UTC date such as 2026-01-31.`, { param });
  }
  return ms;
}
