// Operator endpoints under /admin, guarded by ADMIN_TOKEN.
import { Type } from 'typebox';
import type { App, AppDeps } from '../app.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors, KeyString, LimitsPatch, NumericId } from '../schemas.ts';

export function registerAdminRoutes(app: App, deps: AppDeps): void {
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];

  app.get(
    '/admin/actors/:kind/:id',
    {
      ...base,
      schema: {
        tags, security, summary: "An actor's state, context and revision",
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

  app.patch(
    '/admin/keys/:id',
    {
      ...base,
      schema: {
        tags, security, summary: "Set an API key's administrator limits (rpm, tpd, cpd, cpm; null removes)",
        params: Closed({ id: NumericId }),
        body: Closed(LimitsPatch),
        response: { 200: Type.Object({}, { additionalProperties: true }), ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => deps.services.keys.updateByAdmin(Number(req.params.id), req.body),
  );
}
