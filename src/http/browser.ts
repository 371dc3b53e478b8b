// Browser credentials for the dashboard: the session cookies and the cross-site rule.
//
// A browser holds its credential in a `__Host-` cookie (HttpOnly, Secure, SameSite=Strict, Path=/),
// which page scripts cannot read. The cookie is used only when the request has no Authorization
// header (an API client's bearer token always wins), and a state-changing request carrying it must
// prove it comes from the dashboard's own pages: `X-Gateway-Client: dashboard` (a custom header, which
// a cross-site page cannot send without a CORS preflight this gateway never grants) and
// `Sec-Fetch-Site: same-origin` (or, from a browser that does not send it, an `Origin` equal to the
// request's own). Otherwise 403 `cross_site_request`, before anything is read or written.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';

/** The account's session (the portal session token). */
export const SESSION_COOKIE = '__Host-gw_session';
/** The operator's session (an opaque id, never the admin token). */
export const ADMIN_COOKIE = '__Host-gw_admin';
export const CLIENT_HEADER = 'x-gateway-client';
export const DASHBOARD_CLIENT = 'dashboard';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Whether the request says it comes from the dashboard (`X-Gateway-Client: dashboard`). */
export function fromDashboard(request: FastifyRequest): boolean {
  return request.headers[CLIENT_HEADER] === DASHBOARD_CLIENT;
}

/** The value of the first cookie named `name` in the Cookie header, or null. */
export function cookieOf(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== name) continue;
    const value = part.slice(eq + 1).trim();
    return value.length > 0 && value.length <= 200 ? value : null;
  }
  return null;
}

/**
 * The credential a request presents: the bearer token when an Authorization header is present
 * (whatever it holds: a malformed one is refused, never replaced by the cookie), else the cookie,
 * checked against the cross-site rule for state-changing methods. Null when there is neither.
 */
export function credentialOf(
  request: FastifyRequest,
  cookie: string,
  bearer: (r: FastifyRequest) => string | null,
): { token: string | null; via: 'bearer' } | { token: string; via: 'cookie' } | null {
  if (request.headers.authorization !== undefined) return { token: bearer(request), via: 'bearer' };
  const token = cookieOf(request, cookie);
  if (token === null) return null;
  assertSameOrigin(request);
  return { token, via: 'cookie' };
}

/**
 * Refuses a state-changing request that is not from the dashboard's own origin (see the header).
 * GET, HEAD and OPTIONS pass: they never change state.
 */
export function assertSameOrigin(request: FastifyRequest): void {
  if (SAFE_METHODS.has(request.method)) return;
  if (!fromDashboard(request)) throw crossSite(`it lacks ${CLIENT_HEADER}: ${DASHBOARD_CLIENT}`);
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) {
    if (site !== 'same-origin') throw crossSite(`Sec-Fetch-Site is ${String(site)}, not same-origin`);
    return;
  }
  const origin = request.headers.origin;
  if (origin === undefined) throw crossSite('it has neither Sec-Fetch-Site nor Origin');
  if (origin !== ownOrigin(request)) throw crossSite('its Origin is not this gateway');
}

/**
 * For what a page can embed without CORS (a recording an <audio> element plays): a read signed in
 * by the cookie must come from the dashboard's own origin, or be the person opening the address
 * themself (`Sec-Fetch-Site: none`); another site's or another port's page embedding it gets 403
 * `cross_site_request`. A bearer header passes (no browser sends one by itself).
 */
export function assertNotEmbedded(request: FastifyRequest): void {
  if (request.headers.authorization !== undefined) return;
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw crossSite(`Sec-Fetch-Site is ${String(site)}, not same-origin`);
}

/** This request's own origin as a browser writes it (scheme and host; the port when not the default). */
function ownOrigin(request: FastifyRequest): string {
  return `${request.protocol}://${request.host}`;
}

function crossSite(why: string): ApiError {
  return new ApiError('cross_site_request', `Refused: a request signed in by a cookie must come from the dashboard's own pages, and ${why}.`);
}

export function setCookie(reply: FastifyReply, name: string, value: string, maxAgeSeconds: number): void {
  reply.header('set-cookie', `${name}=${value}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`);
}

export function clearCookie(reply: FastifyReply, name: string): void {
  setCookie(reply, name, '', 0);
}
