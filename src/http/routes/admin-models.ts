// Operator management of virtual models, their routes, and per-account availability.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors, KeyString, NumericId } from '../schemas.ts';
import { adminModel } from '../../models/catalog.ts';
import { ModelSchema } from '../../shared/model-schema.ts';

const ModelId = KeyString(128, { minLength: 1 });
const Owner = Type.Union([Type.Literal('user'), Type.Literal('org')]);

export function registerAdminModelRoutes(app: App, deps: AppDeps): void {
  const { models } = deps.services;
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];
  const Any = Type.Object({}, { additionalProperties: true });

  app.put(
    '/admin/models/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Create or replace a virtual model',
        params: Closed({ id: ModelId }),
        body: ModelSchema,
        response: { 200: Any, 201: Any, ...errors(400, 401, 403) },
      },
    },
    async (req, reply) => {
      const { model, created } = await models.put(req.params.id, req.body);
      return reply.code(created ? 201 : 200).send(adminModel(model));
    },
  );

  app.get(
    '/admin/models',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'All virtual models (inline upstream keys hidden)',
        response: { 200: Type.Object({ data: Type.Array(Any) }), ...errors(401, 403) },
      },
    },
    async () => ({
      data: (await models.list()).map(adminModel),
    }),
  );

  app.get(
    '/admin/models/:id',
    { ...base, schema: { tags, security, summary: 'One virtual model', params: Closed({ id: ModelId }), response: { 200: Any, ...errors(401, 403, 404) } } },
    async (req) => {
      const m = await models.get(req.params.id);
      if (!m) throw new ApiError('not_found', `No model '${req.params.id}'.`);
      return adminModel(m);
    },
  );

  app.delete(
    '/admin/models/:id',
    {
      ...base,
      schema: { tags, security, summary: 'Delete a virtual model', params: Closed({ id: ModelId }), response: { 200: Any, ...errors(401, 403, 404) } },
    },
    async (req) => {
      if (!(await models.remove(req.params.id))) throw new ApiError('not_found', `No model '${req.params.id}'.`);
      return { id: req.params.id, deleted: true };
    },
  );

  app.put(
    '/admin/access/:owner_type/:owner_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Restrict an account (user or organization) to a list of models; null lifts the restriction',
        params: Closed({ owner_type: Owner, owner_id: NumericId }),
        body: Closed({ models: Type.Union([Type.Array(ModelId, { maxItems: 10_000 }), Type.Null()]) }),
        response: { 200: Any, ...errors(400, 401, 403) },
      },
    },
    async (req) => {
      const account = `${req.params.owner_type}:${Number(req.params.owner_id)}`;
      await models.setAccess(account, req.body.models);
      return { owner_type: req.params.owner_type, owner_id: Number(req.params.owner_id), models: req.body.models };
    },
  );

  app.get(
    '/admin/access/:owner_type/:owner_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "An account's model restriction (null: every model)",
        params: Closed({ owner_type: Owner, owner_id: NumericId }),
        response: { 200: Any, ...errors(401, 403) },
      },
    },
    async (req) => ({
      owner_type: req.params.owner_type,
      owner_id: Number(req.params.owner_id),
      models: await models.getAccess(`${req.params.owner_type}:${Number(req.params.owner_id)}`),
    }),
  );
}
