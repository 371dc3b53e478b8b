// API keys of the signed-in user: create, list (paginated, searched), show (full key, retrievable at any time), rename or
// self-limit, revoke.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, IsoDate, KeyString, LimitsPatch, NullableIso, NumericId, OneOf } from '../schemas.ts';
import { SCOPES, type KeyStatus } from '../../identity/keys.ts';
import type { PageQuery } from '../../shared/pages.ts';
import { AfterId, Limit, limitOf, PageOf } from '../pages.ts';

const Scope = OneOf(SCOPES);
export const Key = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String(),
  scopes: Type.Array(Type.String()),
  expires_at: NullableIso,
  created_at: IsoDate,
  last_used_at: NullableIso,
  status: Type.String(),
  rpm: Type.Union([Type.Integer(), Type.Null()]),
  tpd: Type.Union([Type.Integer(), Type.Null()]),
  cpd: Type.Union([Type.Integer(), Type.Null()]),
  cpm: Type.Union([Type.Integer(), Type.Null()]),
});
/** The key list's query (the portal's, and the operators' for one account). */
export const KeyListQuery = {
  limit: Limit,
  after: AfterId,
  search: Type.Optional(KeyString(100, { minLength: 1, description: 'Part of the name or the prefix, any case' })),
  status: Type.Optional(Type.Union([Type.Literal('active'), Type.Literal('revoked'), Type.Literal('expired')])),
};

export function keyPageQuery(q: {
  limit?: string;
  after?: string;
  search?: string;
  status?: KeyStatus;
}): PageQuery<number> & { search?: string; status?: KeyStatus } {
  return {
    limit: limitOf(q),
    ...(q.after !== undefined ? { after: Number(q.after) } : {}),
    ...(q.search !== undefined ? { search: q.search } : {}),
    ...(q.status !== undefined ? { status: q.status } : {}),
  };
}

const KeyWithSecret = Type.Intersect([Key, Type.Object({ api_key: Type.String() })]);

export function registerPortalKeyRoutes(app: App, deps: AppDeps): void {
  const { keys } = deps.services;
  const base = { preHandler: requireSession(deps) };
  const tags = ['keys'];
  const security = [{ session: [] }];
  const params = Closed({ id: NumericId });

  app.post(
    '/portal/keys',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Create an API key (optionally with your own rpm/tpd/cpd/cpm limits)',
        body: Closed({
          name: KeyString(100, { minLength: 1 }),
          expires_at: Type.Optional(KeyString(40)),
          scopes: Type.Optional(Type.Array(Scope, { minItems: 1, maxItems: SCOPES.length })),
          ...LimitsPatch,
        }),
        response: { 201: KeyWithSecret, ...errors(400, 401, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await keys.create(sessionOf(req).id, req.body)),
  );

  app.get(
    '/portal/keys',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Your API keys, newest first; search and status filter all of them, not the page',
        querystring: Closed(KeyListQuery),
        response: { 200: PageOf(Key), ...errors(400, 401) },
      },
    },
    async (req) => keys.page(sessionOf(req).id, keyPageQuery(req.query)),
  );

  app.get(
    '/portal/keys/:id',
    { ...base, schema: { tags, security, summary: 'One key, with its full api_key', params, response: { 200: KeyWithSecret, ...errors(401, 404) } } },
    async (req) => keys.get(sessionOf(req).id, Number(req.params.id)),
  );

  app.patch(
    '/portal/keys/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Rename a key or set your own rpm/tpd/cpd/cpm limits on it (null removes yours)',
        params,
        body: Closed({ name: Type.Optional(KeyString(100, { minLength: 1 })), ...LimitsPatch }),
        response: { 200: Key, ...errors(400, 401, 404) },
      },
    },
    async (req) => keys.updateByOwner(sessionOf(req).id, Number(req.params.id), req.body),
  );

  app.delete(
    '/portal/keys/:id',
    { ...base, schema: { tags, security, summary: 'Revoke a key (effective on the next request)', params, response: { 200: Key, ...errors(401, 404) } } },
    async (req) => keys.revoke(sessionOf(req).id, Number(req.params.id)),
  );
}
