// Operator limits on one account (a user's or an organization's) over the gateway's defaults:
//   PATCH /admin/limits/{user|org}/{id}  {voice_max_concurrent_calls: n | null, recording_retention_days: days | null}  (null: the default)
//   GET   /admin/limits/{user|org}/{id}
// Either answers 404 for a user or organization that is not there.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { Closed, errors, NumericId } from '../schemas.ts';
import type { AccountLimitValues } from '../../identity/account-limits.ts';

const Owner = Type.Union([Type.Literal('user'), Type.Literal('org')]);
const Limits = Type.Object({
  owner_type: Owner,
  owner_id: Type.Integer(),
  voice_max_concurrent_calls: Type.Union([Type.Integer(), Type.Null()]),
  recording_retention_days: Type.Union([Type.Integer(), Type.Null()]),
});

export function registerAdminLimitRoutes(app: App, deps: AppDeps): void {
  const { accountLimits } = deps.services;
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];
  const params = Closed({ owner_type: Owner, owner_id: NumericId });
  const view = (ownerType: 'user' | 'org', ownerId: number, values: AccountLimitValues) => ({
    owner_type: ownerType,
    owner_id: ownerId,
    ...values,
  });

  app.patch(
    '/admin/limits/:owner_type/:owner_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Set an account's limits over the gateway's defaults (null: back to the default)",
        params,
        body: Closed({
          voice_max_concurrent_calls: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 100_000 }), Type.Null()])),
          recording_retention_days: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 3650 }), Type.Null()])),
        }),
        response: { 200: Limits, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const id = Number(req.params.owner_id);
      const account = await accountLimits.requireAccount(req.params.owner_type, id);
      return view(req.params.owner_type, id, await accountLimits.set(account, req.body));
    },
  );

  app.get(
    '/admin/limits/:owner_type/:owner_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "An account's limits (null: the gateway's default)",
        params,
        response: { 200: Limits, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const id = Number(req.params.owner_id);
      return view(req.params.owner_type, id, await accountLimits.get(await accountLimits.requireAccount(req.params.owner_type, id)));
    },
  );
}
