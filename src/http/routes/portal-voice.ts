// The signed-in user's account's voice calls, for the dashboard's Calls page: the routes and answers
// of /v1/voice/calls (registerCallRoutes), asked by the session instead of a key. An organization's
// members all see, and may hang up, the organization's calls, as their keys do on /v1.
//   GET  /portal/voice/calls[/{id}]          the list (same cursor and filters), one call
//   POST /portal/voice/calls/{id}/cancel     before the answer (billed 0)
//   POST /portal/voice/calls/{id}/hangup     in progress (end_reason api_hangup)
//   GET|DELETE /portal/voice/calls/{id}/recording   (voice-recording.ts; deleting is the owner's or an admin's)
// Cookie-signed controls follow the dashboard's cross-site rule (requireSession).
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { registerCallRoutes } from './v1-voice.ts';

export function registerPortalVoiceRoutes(app: App, deps: AppDeps): void {
  registerCallRoutes(app, deps, {
    prefix: '/portal',
    preHandler: requireSession(deps),
    security: [{ session: [] }],
    tags: ['voice'],
    account: async (req) => (await deps.services.billing.accountOf(sessionOf(req).id)).walletId,
    role: async (req) => (await deps.services.billing.accountOf(sessionOf(req).id)).role,
  });
}
