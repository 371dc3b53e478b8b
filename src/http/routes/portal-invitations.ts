// Organization invitations: the inviting side under /portal/org (owner or admin), the invitee's
// under /portal/invitations. Answers never tell whether an e-mail has an account or an organization,
// and an invitation that is not the caller's is "not found".
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, IsoDate, KeyString, NumericId } from '../schemas.ts';
import { Org } from './portal-org.ts';

const InvitedRole = Type.Union([Type.Literal('admin'), Type.Literal('member')]);
const Invitation = Type.Object({
  id: Type.Integer(),
  email: Type.String(),
  role: InvitedRole,
  status: Type.Literal('pending'),
  expires_at: IsoDate,
  created_at: IsoDate,
});
const Received = Type.Object({
  id: Type.Integer(),
  org_id: Type.Integer(),
  org_name: Type.String(),
  role: InvitedRole,
  inviter_email: Type.String(),
  expires_at: IsoDate,
  created_at: IsoDate,
});
const Params = Closed({ id: NumericId });

export function registerPortalInvitationRoutes(app: App, deps: AppDeps): void {
  const { invitations } = deps.services;
  const base = { preHandler: requireSession(deps) };
  const tags = ['organizations'];
  const security = [{ session: [] }];

  app.post(
    '/portal/org/members',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Invite someone by e-mail (owner or admin); they join when they accept',
        description: 'The same 202 answer whether or not the e-mail has an account or an organization; re-inviting while pending returns the same invitation.',
        body: Closed({ email: KeyString(254, { minLength: 3 }), role: Type.Union([InvitedRole, Type.Literal('owner')]) }),
        response: { 202: Type.Object({ invitation: Invitation }), ...errors(400, 401, 403, 404, 409, 429) },
      },
    },
    async (req, reply) => reply.code(202).send({ invitation: await invitations.invite(sessionOf(req), req.body.email, req.body.role) }),
  );

  app.get(
    '/portal/org/invitations',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "Your organization's pending invitations (owner or admin)",
        response: { 200: Type.Object({ invitations: Type.Array(Invitation) }), ...errors(401, 403, 404) },
      },
    },
    async (req) => ({ invitations: await invitations.listOfOrg(sessionOf(req).id) }),
  );

  app.delete(
    '/portal/org/invitations/:id',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Revoke a pending invitation (owner or admin)',
        params: Params,
        response: { 200: Type.Object({ id: Type.Integer(), revoked: Type.Boolean() }), ...errors(401, 403, 404) },
      },
    },
    async (req) => invitations.revoke(sessionOf(req).id, Number(req.params.id)),
  );

  app.get(
    '/portal/invitations',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Pending invitations addressed to you',
        response: { 200: Type.Object({ invitations: Type.Array(Received) }), ...errors(401) },
      },
    },
    async (req) => ({ invitations: await invitations.received(sessionOf(req).id) }),
  );

  app.post(
    '/portal/invitations/:id/accept',
    {
      ...base,
      schema: { tags, security, summary: 'Accept an invitation: join its organization', params: Params, response: { 200: Org, ...errors(401, 404, 409, 410) } },
    },
    async (req) => invitations.accept(sessionOf(req).id, Number(req.params.id)),
  );

  app.post(
    '/portal/invitations/:id/decline',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Decline an invitation',
        params: Params,
        response: { 200: Type.Object({ id: Type.Integer(), status: Type.Literal('declined') }), ...errors(401, 404, 410) },
      },
    },
    async (req) => invitations.decline(sessionOf(req).id, Number(req.params.id)),
  );
}
