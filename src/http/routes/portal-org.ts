// Organizations: the spec's resources and roles, plus our GET/transfer/delete. Joining is by
// invitation: routes/portal-invitations.ts (POST /portal/org/members among them).
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, IsoDate, KeyString, NumericId } from '../schemas.ts';

export const Org = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  wallet_cents: Type.Integer(),
  created_at: IsoDate,
  role: Type.Optional(Type.String()),
});
const Member = Type.Object({ user_id: Type.Integer(), email: Type.String(), role: Type.String(), joined_at: IsoDate });

export function registerPortalOrgRoutes(app: App, deps: AppDeps): void {
  const { orgs } = deps.services;
  const base = { preHandler: requireSession(deps) };
  const tags = ['organizations'];
  const security = [{ session: [] }];

  app.post(
    '/portal/org',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Create an organization (you become its owner)',
        body: Closed({ name: KeyString(200, { minLength: 1 }) }),
        response: { 201: Org, ...errors(400, 401, 409) },
      },
    },
    async (req, reply) => reply.code(201).send(await orgs.create(sessionOf(req).id, req.body.name.trim() || req.body.name)),
  );

  app.get('/portal/org', { ...base, schema: { tags, security, summary: 'Your organization', response: { 200: Org, ...errors(401, 404) } } }, async (req) =>
    orgs.get(sessionOf(req).id),
  );

  app.delete(
    '/portal/org',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Delete the organization (owner; wallet must be empty)',
        response: { 200: Type.Object({ id: Type.Integer(), deleted: Type.Boolean() }), ...errors(401, 403, 404, 409) },
      },
    },
    async (req) => orgs.delete(sessionOf(req).id),
  );

  app.get(
    '/portal/org/members',
    {
      ...base,
      schema: { tags, security, summary: 'Members of your organization', response: { 200: Type.Object({ members: Type.Array(Member) }), ...errors(401, 404) } },
    },
    async (req) => ({
      members: await orgs.listMembers(sessionOf(req).id),
    }),
  );

  app.delete(
    '/portal/org/members/:user_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Remove a member (owner or admin)',
        params: Closed({ user_id: NumericId }),
        response: { 200: Type.Object({ user_id: Type.Integer(), removed: Type.Boolean() }), ...errors(401, 403, 404, 409) },
      },
    },
    async (req) => orgs.remove(sessionOf(req).id, Number(req.params.user_id)),
  );

  app.patch(
    '/portal/org/members/:user_id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Change a member's role: admin or member (owner only; ownership moves by transfer)",
        params: Closed({ user_id: NumericId }),
        body: Closed({ role: Type.Union([Type.Literal('admin'), Type.Literal('member')]) }),
        response: { 200: Member, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => orgs.setRole(sessionOf(req).id, Number(req.params.user_id), req.body.role),
  );

  app.post(
    '/portal/org/leave',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Leave your organization (not the owner)',
        response: { 200: Type.Object({ org_id: Type.Integer(), left: Type.Boolean() }), ...errors(401, 404, 409) },
      },
    },
    async (req) => orgs.leave(sessionOf(req).id),
  );

  app.post(
    '/portal/org/transfer',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Make another member the owner (owner; you become admin)',
        body: Closed({ user_id: Type.Integer({ minimum: 1 }) }),
        response: { 200: Org, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => orgs.transfer(sessionOf(req).id, req.body.user_id),
  );
}
