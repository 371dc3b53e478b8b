// preHandlers that establish who is calling: a portal session (bearer token or the dashboard's
// cookie), an API key with a scope, or the administrator (token or the dashboard's operator
// session). Each answers in the error envelope when it refuses.
import { timingSafeEqual, createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import { ADMIN_COOKIE, credentialOf, SESSION_COOKIE } from './browser.ts';
import type { AppDeps } from './types.ts';
import { bearerToken, type Scope } from '../identity/keys.ts';
import type { SessionUser } from '../identity/accounts.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';

const bearer = (request: FastifyRequest): string | null => bearerToken(request.headers.authorization);

export function requireSession(deps: AppDeps) {
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    // A bearer header wins; else the dashboard's cookie, refused cross-site (src/http/browser.ts).
    const credential = credentialOf(request, SESSION_COOKIE, bearer);
    if (!credential?.token) throw new ApiError('invalid_session', 'Missing session token: send Authorization: Bearer <session_token> from /portal/auth/login.');
    const user = await deps.services.accounts.authenticate(credential.token);
    if (!user) throw new ApiError('invalid_session', 'Session token is invalid, expired or logged out; log in again.');
    request.sessionUser = user;
  };
}

/**
 * The session the request presents (bearer header, else the dashboard's cookie), or null when it
 * presents none, or one that is invalid, expired or logged out: never a refusal (GET /portal/session).
 */
export function findSession(deps: AppDeps) {
  return async (request: FastifyRequest): Promise<SessionUser | null> => {
    const credential = credentialOf(request, SESSION_COOKIE, bearer);
    return credential?.token ? deps.services.accounts.authenticate(credential.token) : null;
  };
}

/**
 * Authenticates the API key for `scope`, then counts the request against the key's per-key limits:
 * the spec applies RPM to every request on the key (GET /v1/models too), so admission happens here,
 * once per request, not in each endpoint's metered path. An admitted request's answer tells a key
 * with limits where it stands (x-ratelimit-* headers), so a client can pace itself before a 429.
 */
export function requireApiKey(deps: AppDeps, scope: Exclude<Scope, '*'>) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const principal = await deps.services.keys.authenticate(request.headers.authorization, scope);
    request.principal = principal;
    const standing = await deps.services.billing.admit(principal);
    if (standing) reply.headers(standing);
  };
}

/**
 * The admin token as a bearer header, or (without an Authorization header) the dashboard's operator
 * session cookie, refused cross-site like the account's.
 */
export function requireAdmin(deps: AppDeps) {
  const adminToken = deps.config.adminToken;
  const expected = adminToken ? createHash('sha256').update(adminToken).digest() : null;
  return async (request: FastifyRequest, _reply: FastifyReply): Promise<void> => {
    if (!expected || !adminToken) throw new ApiError('admin_disabled', 'The admin API is disabled: start the gateway with ADMIN_TOKEN set.');
    const credential = credentialOf(request, ADMIN_COOKIE, bearer);
    if (credential?.via === 'cookie') {
      if (!(await deps.services.operatorSessions.check(credential.token, adminToken))) {
        throw new ApiError('invalid_admin_token', 'The operator session is invalid, expired or ended; sign in again with the admin token.');
      }
      request.adminVia = 'cookie';
      return;
    }
    const token = credential?.token ?? null;
    const given = createHash('sha256')
      .update(token ?? '')
      .digest();
    if (!token || !timingSafeEqual(given, expected)) throw new ApiError('invalid_admin_token', 'Missing or wrong admin token.');
    request.adminVia = 'bearer';
  };
}

/** The session user set by requireSession (routes using it always run after it). */
export function sessionOf(request: FastifyRequest): SessionUser {
  if (!request.sessionUser) throw new ApiError('invalid_session', 'No session.');
  return request.sessionUser;
}

export function principalOf(request: FastifyRequest): ApiKeyPrincipal {
  if (!request.principal) throw new ApiError('invalid_api_key', 'No API key.');
  return request.principal;
}
