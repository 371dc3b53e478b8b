// Operator management of intent packs: PUT stores a new version (validated, and trained once to
// prove it trains) that every instance uses from its next request; GET lists them or shows one.
import { Type } from 'typebox';
import type { App, AppDeps } from '../app.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors } from '../schemas.ts';
import { PackError } from '../../intent/pack.ts';

const PackId = Type.String({ pattern: '^[a-z0-9][a-z0-9._-]{0,63}$' });

export function registerAdminIntentRoutes(app: App, deps: AppDeps): void {
  const { intentPacks } = deps.services;
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];
  const Any = Type.Object({}, { additionalProperties: true });

  app.put(
    '/admin/intent-packs/:id',
    {
      ...base,
      // Big packs are allowed (examples); the body is validated by validatePack, which names the bad field.
      bodyLimit: deps.config.http.inferenceBodyLimitBytes * 16,
      schema: { tags, security, summary: 'Create or replace an intent pack (a new version takes effect on the next request)', params: Closed({ id: PackId }), body: Any, response: { 200: Any, 201: Any, ...errors(400, 401, 403) } },
    },
    async (req, reply) => {
      const body = req.body as Record<string, unknown>;
      if (body.id !== undefined && body.id !== req.params.id) {
        throw new ApiError('invalid_request', `The pack's id '${String(body.id)}' differs from the path's '${req.params.id}'.`, { param: 'id' });
      }
      try {
        const { pack, created } = await intentPacks.put({ ...body, id: req.params.id });
        return reply.code(created ? 201 : 200).send(pack);
      } catch (err) {
        if (err instanceof PackError) throw new ApiError('invalid_request', err.message, { param: err.path || 'body' });
        throw err;
      }
    },
  );

  app.get('/admin/intent-packs', { ...base, schema: { tags, security, summary: 'Intent packs (id, version, revision, source)', response: { 200: Type.Object({ data: Type.Array(Any) }), ...errors(401, 403) } } }, async () => ({
    data: await intentPacks.list(),
  }));

  app.get('/admin/intent-packs/:id', { ...base, schema: { tags, security, summary: 'One intent pack, in full', params: Closed({ id: PackId }), response: { 200: Any, ...errors(401, 403, 404) } } }, async (req) => {
    const pack = await intentPacks.getRaw(req.params.id);
    if (!pack) throw new ApiError('not_found', `No intent pack '${req.params.id}'.`);
    return pack;
  });
}
