// Operator endpoints under /admin, guarded by ADMIN_TOKEN.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors, IsoDate, KeyString, LimitsPatch, NumericId } from '../schemas.ts';
import { publicUser } from '../../identity/accounts.ts';
import { PageOf } from '../pages.ts';
import { Key, KeyListQuery, keyPageQuery } from './portal-keys.ts';

export function registerAdminRoutes(app: App, deps: AppDeps): void {
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];

  app.get(
    '/admin/actors/:kind/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "An actor's state, context and revision",
        params: Closed({ kind: Type.String({ pattern: '^[a-z][a-z0-9_-]{0,63}$' }), id: KeyString(200, { minLength: 1 }) }),
        response: { 200: Type.Object({}, { additionalProperties: true }), ...errors(401, 403, 404) },
      },
    },
    async (req) => {
      const view = await deps.services.actors.get(req.params.kind, req.params.id).catch((err: unknown) => {
        if ((err as { code?: string }).code === 'not_found') return null;
        throw err;
      });
      if (!view) throw new ApiError('not_found', `No actor ${req.params.kind}/${req.params.id}.`);
      return view;
    },
  );

  app.get(
    '/admin/users',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Find an account by e-mail (exact, any case): the user, KYC state and organization',
        querystring: Closed({ email: KeyString(254, { minLength: 3 }) }),
        response: {
          200: Type.Object({
            data: Type.Array(
              Type.Object({
                id: Type.Integer(),
                email: Type.String(),
                created_at: IsoDate,
                kyc_verified: Type.Boolean(),
                organization: Type.Union([Type.Object({ id: Type.Integer(), role: Type.String() }), Type.Null()]),
              }),
            ),
          }),
          ...errors(400, 401, 403),
        },
      },
    },
    async (req) => {
      const user = await deps.services.accounts.findByEmail(req.query.email);
      if (!user) return { data: [] };
      const membership = await deps.services.orgs.membershipOf(user._id);
      return {
        data: [
          { ...publicUser(user), kyc_verified: user.kyc_verified === true, organization: membership ? { id: membership.org_id, role: membership.role } : null },
        ],
      };
    },
  );

  app.get(
    '/admin/keys',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "An account's keys, as its owner pages them (user_id, with search, status, limit, after), or the key with one exact prefix",
        querystring: Closed({ user_id: Type.Optional(NumericId), prefix: Type.Optional(Type.String({ pattern: '^sk-live-[0-9a-f]{12}$' })), ...KeyListQuery }),
        response: { 200: PageOf(Type.Intersect([Key, Type.Object({ user_id: Type.Integer() })])), ...errors(400, 401, 403) },
      },
    },
    async (req) => {
      const { user_id, prefix } = req.query;
      if ((user_id === undefined) === (prefix === undefined))
        throw new ApiError('invalid_request', 'Give exactly one of user_id and prefix.', { param: 'user_id' });
      if (prefix !== undefined) {
        // One exact key: a list parameter beside it would be ignored, so it is refused instead.
        const extra = (['search', 'status', 'limit', 'after'] as const).find((k) => req.query[k] !== undefined);
        if (extra) throw new ApiError('invalid_request', `prefix finds one key and takes no '${extra}' (that is for user_id's list).`, { param: extra });
        const key = await deps.services.keys.findByPrefix(prefix);
        return { data: key ? [key] : [], has_more: false, next_after: null };
      }
      const page = await deps.services.keys.page(Number(user_id), keyPageQuery(req.query));
      return { ...page, data: page.data.map((k) => ({ ...k, user_id: Number(user_id) })) };
    },
  );

  app.patch(
    '/admin/keys/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Set an API key's administrator limits (rpm, tpd, cpd, cpm; null removes)",
        params: Closed({ id: NumericId }),
        body: Closed(LimitsPatch),
        response: { 200: Type.Object({}, { additionalProperties: true }), ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => deps.services.keys.updateByAdmin(Number(req.params.id), req.body),
  );
}
