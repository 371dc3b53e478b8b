// The dashboard's operator session: the admin token (a bearer header, once) exchanged for a
// 15-minute server-side session in the __Host-gw_admin cookie; the token itself is never kept by the
// page, never put in a cookie, never echoed.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { ADMIN_COOKIE, clearCookie, cookieOf, fromDashboard, setCookie } from '../browser.ts';
import { ApiError } from '../errors.ts';
import { errors, IsoDate } from '../schemas.ts';

const Session = Type.Object({ expires_at: IsoDate });

export function registerAdminSessionRoutes(app: App, deps: AppDeps): void {
  const { operatorSessions } = deps.services;
  const admin = requireAdmin(deps);
  const tags = ['admin'];
  const security = [{ admin: [] }];

  app.post(
    '/admin/session',
    {
      preHandler: admin,
      schema: {
        tags,
        security,
        summary: 'Exchange the admin token for an operator session cookie (dashboard only)',
        response: { 200: Session, ...errors(400, 401, 403) },
      },
    },
    async (req, reply) => {
      // Only the token opens a session: a session cannot extend itself.
      if (req.adminVia !== 'bearer')
        throw new ApiError('invalid_admin_token', 'Send the admin token as Authorization: Bearer <ADMIN_TOKEN> to open an operator session.');
      if (!fromDashboard(req))
        throw new ApiError(
          'invalid_request',
          'Operator sessions are for the dashboard: send X-Gateway-Client: dashboard (API clients use the admin token directly).',
        );
      const opened = await operatorSessions.open(deps.config.adminToken!);
      setCookie(reply, ADMIN_COOKIE, opened.id, opened.ttl_seconds);
      return { expires_at: opened.expires_at.toISOString() };
    },
  );

  app.get(
    '/admin/session',
    { schema: { tags, security, summary: 'The operator session of this browser: its expiry, or 401', response: { 200: Session, ...errors(401, 403) } } },
    async (req) => {
      const expires = await current(req);
      if (!expires) throw new ApiError('invalid_admin_token', 'No operator session: sign in with the admin token.');
      return { expires_at: expires.toISOString() };
    },
  );

  app.delete(
    '/admin/session',
    {
      preHandler: admin,
      schema: {
        tags,
        security,
        summary: 'End the operator session and clear its cookie',
        response: { 200: Type.Object({ revoked: Type.Boolean() }), ...errors(401, 403) },
      },
    },
    async (req, reply) => {
      const id = req.adminVia === 'cookie' ? cookieOf(req, ADMIN_COOKIE) : null;
      if (!id) throw new ApiError('invalid_admin_token', 'No operator session cookie to end.');
      clearCookie(reply, ADMIN_COOKIE);
      return { revoked: await operatorSessions.revoke(id) };
    },
  );

  /** The cookie's session expiry (GET only: no state change, so no cross-site rule needed). */
  async function current(req: Parameters<typeof admin>[0]): Promise<Date | null> {
    if (!deps.config.adminToken) throw new ApiError('admin_disabled', 'The admin API is disabled: start the gateway with ADMIN_TOKEN set.');
    const id = req.headers.authorization === undefined ? cookieOf(req, ADMIN_COOKIE) : null;
    return id ? operatorSessions.check(id, deps.config.adminToken) : null;
  }
}
