// Portal accounts: sign-up, login, logout, me, session. API clients get a session token in the body; the
// dashboard (X-Gateway-Client: dashboard) gets it only in the __Host- session cookie (browser.ts).
import { Type } from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App, AppDeps } from '../types.ts';
import { findSession, requireSession, sessionOf } from '../auth.ts';
import { assertSameOrigin, clearCookie, cookieOf, fromDashboard, SESSION_COOKIE, setCookie } from '../browser.ts';
import { Closed, errors, IsoDate, KeyString } from '../schemas.ts';
import type { SessionGrant, SessionUser } from '../../identity/accounts.ts';

const Credentials = Closed({
  email: KeyString(254, { minLength: 3 }),
  password: Type.String({ minLength: 1, maxLength: 4096 }),
});

const User = Type.Object({ id: Type.Integer(), email: Type.String(), created_at: IsoDate });
const Organization = Type.Union([Type.Object({ id: Type.Integer(), role: Type.String() }), Type.Null()]);
const SessionState = Type.Object({
  signed_in: Type.Boolean(),
  user: Type.Optional(User),
  organization: Type.Optional(Organization),
});
const Grant = Type.Object({
  user: User,
  session_token: Type.Optional(Type.String({ description: 'Absent for the dashboard (X-Gateway-Client: dashboard): its session is the cookie' })),
  expires_at: IsoDate,
});

export function registerPortalAuthRoutes(app: App, deps: AppDeps): void {
  const { accounts, orgs } = deps.services;
  const session = requireSession(deps);

  /** The dashboard's sign-in must come from its own pages too (no login CSRF); API clients are unchanged. */
  const dashboardSameOrigin = async (req: FastifyRequest) => {
    if (fromDashboard(req)) assertSameOrigin(req);
  };

  /** The grant as the caller takes it: the token in the body, or (dashboard) in the cookie only. */
  const deliver = (req: FastifyRequest, reply: FastifyReply, grant: SessionGrant) => {
    if (!fromDashboard(req)) return grant;
    setCookie(reply, SESSION_COOKIE, grant.session_token, deps.config.auth.sessionTtlHours * 3600);
    return { user: grant.user, expires_at: grant.expires_at };
  };

  app.post(
    '/portal/auth/signup',
    {
      preHandler: dashboardSameOrigin,
      schema: { tags: ['portal'], summary: 'Create an account and open a session', body: Credentials, response: { 201: Grant, ...errors(400, 403, 409, 429) } },
    },
    async (req, reply) => reply.code(201).send(deliver(req, reply, await accounts.signup(req.body.email, req.body.password, req.ip))),
  );

  app.post(
    '/portal/auth/login',
    {
      preHandler: dashboardSameOrigin,
      schema: { tags: ['portal'], summary: 'Open a session', body: Credentials, response: { 200: Grant, ...errors(400, 401, 403, 429) } },
    },
    async (req, reply) => deliver(req, reply, await accounts.login(req.body.email, req.body.password, req.ip)),
  );

  app.post(
    '/portal/auth/logout',
    {
      preHandler: [
        // A cookie that passed the cross-site rule is cleared whatever its session's state, so a
        // browser holding a stale one is signed out too.
        async (req, reply) => {
          if (req.headers.authorization !== undefined || cookieOf(req, SESSION_COOKIE) === null) return;
          assertSameOrigin(req);
          clearCookie(reply, SESSION_COOKIE);
        },
        session,
      ],
      // The body is optional: an absent one means {}.
      preValidation: async (req) => {
        req.body ??= {};
      },
      schema: {
        tags: ['portal'],
        summary: 'Revoke this session (or every session of the account with everywhere: true); clears the dashboard cookie',
        security: [{ session: [] }],
        body: Closed({ everywhere: Type.Optional(Type.Boolean()) }),
        response: { 200: Type.Object({ revoked_sessions: Type.Integer() }), ...errors(401, 403) },
      },
    },
    async (req) => ({ revoked_sessions: await accounts.logout(sessionOf(req), req.body.everywhere === true) }),
  );

  /** The signed-in user and their organization. */
  const meOf = async (me: SessionUser) => {
    const user = await accounts.getUser(me.id);
    const membership = await orgs.membershipOf(me.id);
    return {
      user: { id: me.id, email: me.email, created_at: user!.created_at.toISOString() },
      organization: membership ? { id: membership.org_id, role: membership.role } : null,
    };
  };

  app.get(
    '/portal/me',
    { preHandler: session, schema: { tags: ['portal'], summary: 'The signed-in user and their organization', security: [{ session: [] }] } },
    async (req) => meOf(sessionOf(req)),
  );

  // What the dashboard asks first: a visitor who is not signed in (no cookie, or one whose session
  // ended) is an answer here, not a 401, so a signed-out visit makes no failing request.
  const current = findSession(deps);
  app.get(
    '/portal/session',
    {
      schema: {
        tags: ['portal'],
        summary: 'Whether the request is signed in (200 either way), and as whom: {signed_in: false} or {signed_in: true, user, organization}',
        security: [{ session: [] }, {}],
        response: { 200: SessionState },
      },
    },
    async (req) => {
      const me = await current(req);
      return me ? { signed_in: true, ...(await meOf(me)) } : { signed_in: false };
    },
  );
}
