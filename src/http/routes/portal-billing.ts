// Wallet, billing settings, usage and subscription of the signed-in user's account: their
// organization's while they belong to one, else their own.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, IsoDate } from '../schemas.ts';
import { AfterString, Limit, limitOf, PageOf } from '../pages.ts';

const OwnerType = Type.Union([Type.Literal('user'), Type.Literal('org')]);
const Cents = Type.Integer({ minimum: 0, maximum: 1_000_000_000 });

const Wallet = Type.Object({
  owner_type: OwnerType,
  owner_id: Type.Integer(),
  balance_cents: Type.Integer({ description: 'Whole cents in the wallet (floor), including what calls in flight hold' }),
  available_cents: Type.Integer({ description: 'Whole cents new calls can use' }),
  held_cents: Type.Integer({ description: 'balance_cents - available_cents: reserved by calls in flight' }),
  balance_microcents: Type.Integer({ description: 'The balance in micro-cents (1 cent = 1,000,000)' }),
  low_balance_threshold_cents: Type.Integer(),
  kyc_verified: Type.Boolean({ description: "Whether the account may call models with requires_kyc: the user's verification, or the organization owner's" }),
});

const Metrics = {
  requests: Type.Integer(),
  errors: Type.Integer(),
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
  seconds: Type.Number(),
  characters: Type.Integer(),
  calls: Type.Integer(),
  cost_microcents: Type.Integer(),
  cost_cents: Type.Number(),
};

const Day = Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description: 'UTC date, inclusive' });
const GroupBy = Type.Union([Type.Literal('day'), Type.Literal('model'), Type.Literal('key_prefix'), Type.Literal('member'), Type.Literal('end_user')]);

const UsageSummary = Type.Object({
  owner_type: OwnerType,
  owner_id: Type.Integer(),
  scope: Type.Union([Type.Literal('account'), Type.Literal('member')]),
  from: Type.String(),
  to: Type.String(),
  group_by: Type.String(),
  data: Type.Array(
    Type.Object({
      day: Type.Optional(Type.String()),
      model: Type.Optional(Type.String()),
      key_prefix: Type.Optional(Type.String()),
      user_id: Type.Optional(Type.Integer()),
      end_user: Type.Optional(Type.String()),
      ...Metrics,
    }),
  ),
  totals: Type.Object(Metrics),
});

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);
const UsageRecord = Type.Object({
  id: Type.String(),
  created_at: IsoDate,
  request_id: Type.String(),
  owner_type: OwnerType,
  owner_id: Type.Integer(),
  user_id: Type.Integer(),
  key_prefix: Type.String(),
  model: Type.String(),
  route: Type.Union([Type.String(), Type.Null()]),
  prompt_tokens: NullableInt,
  completion_tokens: NullableInt,
  seconds: Type.Union([Type.Number(), Type.Null()]),
  characters: NullableInt,
  calls: NullableInt,
  cost_microcents: Type.Integer(),
  cost_cents: Type.Number(),
  status: Type.String(),
  latency_ms: Type.Integer(),
  end_user: Type.Union([Type.String(), Type.Null()]),
  cached_tokens: NullableInt,
});

export const Topup = Type.Object({
  id: Type.String(),
  owner_type: OwnerType,
  owner_id: Type.Integer(),
  user_id: Type.Optional(Type.Integer()),
  org_id: Type.Optional(Type.Integer()),
  amount_cents: Type.Integer(),
  reference: Type.Union([Type.String(), Type.Null()]),
  kind: Type.String(),
  status: Type.String(),
  new_balance_cents: Type.Union([Type.Integer(), Type.Null()]),
  created_at: IsoDate,
  credited_at: Type.Union([IsoDate, Type.Null()]),
});

export const Subscription = Type.Object({
  owner_type: OwnerType,
  owner_id: Type.Integer(),
  status: Type.String({ description: 'none, active or canceled' }),
  plan: Type.Union([Type.String(), Type.Null()]),
  monthly_credit_cents: NullableInt,
  current_period_start: Type.Union([IsoDate, Type.Null()]),
  next_renewal_at: Type.Union([IsoDate, Type.Null()]),
  cycles_credited: Type.Integer(),
});

export function registerPortalBillingRoutes(app: App, deps: AppDeps): void {
  const { billingPortal: billing } = deps.services;
  const base = { preHandler: requireSession(deps) };
  const tags = ['billing'];
  const security = [{ session: [] }];

  app.get(
    '/portal/wallet',
    {
      ...base,
      schema: { tags, security, summary: "Your account's wallet (your organization's while you belong to one)", response: { 200: Wallet, ...errors(401) } },
    },
    async (req) => billing.walletView(sessionOf(req).id),
  );

  app.put(
    '/portal/settings',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Billing settings: the low_balance alert threshold (an organization: owner only; 0 turns it off)',
        body: Closed({ low_balance_threshold_cents: Cents }),
        response: {
          200: Type.Object({ owner_type: OwnerType, owner_id: Type.Integer(), low_balance_threshold_cents: Type.Integer() }),
          ...errors(400, 401, 403),
        },
      },
    },
    async (req) => billing.setLowBalanceThreshold(sessionOf(req).id, req.body.low_balance_threshold_cents),
  );

  app.get(
    '/portal/usage',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Usage totals over UTC days, grouped (members see their own; owners and admins the whole organization)',
        querystring: Closed({ from: Type.Optional(Day), to: Type.Optional(Day), group_by: Type.Optional(GroupBy) }),
        response: { 200: UsageSummary, ...errors(400, 401) },
      },
    },
    async (req) => billing.usageSummary(sessionOf(req).id, req.query),
  );

  app.get(
    '/portal/usage/records',
    {
      ...base,
      schema: {
        tags,
        security,
        summary:
          'Usage records, newest first, optionally made on the UTC days from/to (inclusive, as /portal/usage); pass next_after as after for the next page',
        querystring: Closed({
          limit: Limit,
          after: Type.Optional(Type.String({ pattern: '^[0-9a-z]{1,40}$' })),
          from: Type.Optional(Day),
          to: Type.Optional(Day),
        }),
        response: { 200: PageOf(UsageRecord), ...errors(400, 401) },
      },
    },
    async (req) => {
      const q = req.query;
      return billing.usageRecords(sessionOf(req).id, {
        limit: limitOf(q),
        ...(q.after !== undefined ? { after: q.after } : {}),
        ...(q.from !== undefined ? { from: q.from } : {}),
        ...(q.to !== undefined ? { to: q.to } : {}),
      });
    },
  );

  app.get(
    '/portal/wallet/topups',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Your account's top-ups (your organization's while you belong to one), newest first; pass next_after as after",
        querystring: Closed({ limit: Limit, after: AfterString }),
        response: { 200: PageOf(Topup), ...errors(400, 401) },
      },
    },
    async (req) => billing.topupsOf(sessionOf(req).id, { limit: limitOf(req.query), ...(req.query.after !== undefined ? { after: req.query.after } : {}) }),
  );

  app.get(
    '/portal/subscription',
    {
      ...base,
      schema: { tags, security, summary: "Your account's subscription (status none when there is none)", response: { 200: Subscription, ...errors(401) } },
    },
    async (req) => billing.subscriptionView(sessionOf(req).id),
  );
}
