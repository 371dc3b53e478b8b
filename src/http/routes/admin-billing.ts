// Operator billing endpoints under /admin (ADMIN_TOKEN): confirm a manual payment, list top-ups,
// start or change a subscription, set a user's KYC verification.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors, KeyString, NumericId } from '../schemas.ts';
import { Subscription, Topup } from './portal-billing.ts';
import { AfterString, Limit, limitOf, PageOf } from '../pages.ts';

const OwnerType = Type.Union([Type.Literal('user'), Type.Literal('org')]);
const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

export function registerAdminBillingRoutes(app: App, deps: AppDeps): void {
  const { billingPortal: billing } = deps.services;
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];

  app.post(
    '/admin/topups',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Confirm a manual payment: credit a user or organization wallet (201; a repeated reference answers 200 with the original, credited once)',
        body: Closed({
          user_id: Type.Optional(Id),
          org_id: Type.Optional(Id),
          amount_cents: Type.Integer({ minimum: 1, maximum: 1_000_000_000 }),
          reference: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[\\x21-\\x7e]+$' })),
        }),
        response: { 200: Topup, 201: Topup, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      const { topup, created } = await billing.topup(req.body);
      return reply.code(created ? 201 : 200).send(topup);
    },
  );

  app.get(
    '/admin/topups',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Top-ups, newest first: one account's (user_id or org_id) or everyone's; pass next_after as after",
        querystring: Closed({ user_id: Type.Optional(NumericId), org_id: Type.Optional(NumericId), limit: Limit, after: AfterString }),
        response: { 200: PageOf(Topup), ...errors(400, 401, 403) },
      },
    },
    async (req) => {
      const { user_id, org_id, after } = req.query;
      if (user_id !== undefined && org_id !== undefined) throw new ApiError('invalid_request', 'Give at most one of user_id and org_id.', { param: 'org_id' });
      const owner =
        user_id !== undefined
          ? { type: 'user' as const, id: Number(user_id) }
          : org_id !== undefined
            ? { type: 'org' as const, id: Number(org_id) }
            : undefined;
      return billing.topupList({ limit: limitOf(req.query), ...(after !== undefined ? { after } : {}), ...(owner ? { owner } : {}) });
    },
  );

  app.put(
    '/admin/subscriptions/:owner_type/:owner_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Start a plan (credits its first cycle now; the same active plan is left as it is) or cancel with plan null',
        params: Closed({ owner_type: OwnerType, owner_id: NumericId }),
        body: Closed({ plan: Type.Union([KeyString(64, { minLength: 1 }), Type.Null()]) }),
        response: { 200: Subscription, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req) => (await billing.setSubscription(req.params.owner_type, Number(req.params.owner_id), req.body.plan)).subscription,
  );

  app.put(
    '/admin/users/:id/kyc',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Set a user's identity verification (an organization's calls count its owner's)",
        params: Closed({ id: NumericId }),
        body: Closed({ verified: Type.Boolean() }),
        response: { 200: Type.Object({ user_id: Type.Integer(), kyc_verified: Type.Boolean() }), ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => billing.setKyc(Number(req.params.id), req.body.verified),
  );
}
