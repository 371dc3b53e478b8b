// Portal accounts: sign-up, login, logout, me. Session tokens come from signup and login.
import { Type } from 'typebox';
import type { App, AppDeps } from '../app.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { Closed, errors, IsoDate, KeyString } from '../schemas.ts';

const Credentials = Closed({
  email: KeyString(254, { minLength: 3 }),
  password: Type.String({ minLength: 1, maxLength: 4096 }),
});

const User = Type.Object({ id: Type.Integer(), email: Type.String(), created_at: IsoDate });
const Grant = Type.Object({ user: User, session_token: Type.String(), expires_at: IsoDate });

export function registerPortalAuthRoutes(app: App, deps: AppDeps): void {
  const { accounts, orgs } = deps.services;
  const session = requireSession(deps);

  app.post(
    '/portal/auth/signup',
    { schema: { tags: ['portal'], summary: 'Create an account and open a session', body: Credentials, response: { 201: Grant, ...errors(400, 409, 429) } } },
    async (req, reply) => reply.code(201).send(await accounts.signup(req.body.email, req.body.password, req.ip)),
  );

  app.post(
    '/portal/auth/login',
    { schema: { tags: ['portal'], summary: 'Open a session', body: Credentials, response: { 200: Grant, ...errors(400, 401, 429) } } },
    async (req) => accounts.login(req.body.email, req.body.password, req.ip),
  );

  app.post(
    '/portal/auth/logout',
    {
      preHandler: session,
      // The body is optional: an absent one means {}.
      preValidation: async (req) => {
        req.body ??= {};
      },
      schema: {
        tags: ['portal'],
        summary: 'Revoke this session (or every session of the account with everywhere: true)',
        security: [{ session: [] }],
        body: Closed({ everywhere: Type.Optional(Type.Boolean()) }),
        response: { 200: Type.Object({ revoked_sessions: Type.Integer() }), ...errors(401) },
      },
    },
    async (req) => ({ revoked_sessions: await accounts.logout(sessionOf(req), req.body.everywhere === true) }),
  );

  app.get(
    '/portal/me',
    { preHandler: session, schema: { tags: ['portal'], summary: 'The signed-in user and their organization', security: [{ session: [] }] } },
    async (req) => {
      const me = sessionOf(req);
      const user = await accounts.getUser(me.id);
      const membership = await orgs.membershipOf(me.id);
      return {
        user: { id: me.id, email: me.email, created_at: user!.created_at.toISOString() },
        organization: membership ? { id: membership.org_id, role: membership.role } : null,
      };
    },
  );
}
