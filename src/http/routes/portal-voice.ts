// The signed-in user's account's voice calls, for the dashboard's Calls page: the routes and answers
// of /v1/voice/calls (registerCallRoutes), asked by the session instead of a key. An organization's
// members all see, and may hang up, the organization's calls, as their keys do on /v1.
//   GET  /portal/voice/calls[/{id}]          the list (same cursor and filters), one call
//   POST /portal/voice/calls/{id}/cancel     before the answer (billed 0)
//   POST /portal/voice/calls/{id}/hangup     in progress (end_reason api_hangup)
//   GET|DELETE /portal/voice/calls/{id}/recording   (voice-recording.ts; deleting is the owner's or an admin's)
//   GET  /portal/voice/numbers               the numbers the account owns (inbound calls come in on
//        them), read-only: an operator assigns them (PUT /admin/voice/numbers/{number})
// Cookie-signed controls follow the dashboard's cross-site rule (requireSession).
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireSession, sessionOf } from '../auth.ts';
import { errors } from '../schemas.ts';
import { registerCallRoutes } from './v1-voice.ts';
import { NumberAnswering } from './admin-voice-numbers.ts';

/** A number as its owner reads it: how its calls are answered (the operator's settings, not whose it is). */
const OwnNumber = Type.Object({
  number: Type.String(),
  model: Type.String(),
  ...NumberAnswering,
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});

export function registerPortalVoiceRoutes(app: App, deps: AppDeps): void {
  registerCallRoutes(app, deps, {
    prefix: '/portal',
    preHandler: requireSession(deps),
    security: [{ session: [] }],
    tags: ['voice'],
    account: async (req) => (await deps.services.billing.accountOf(sessionOf(req).id)).walletId,
    role: async (req) => (await deps.services.billing.accountOf(sessionOf(req).id)).role,
  });

  app.get(
    '/portal/voice/numbers',
    {
      preHandler: requireSession(deps),
      schema: {
        tags: ['voice'],
        summary: "The phone numbers the account's inbound calls come in on (an operator assigns them), by number",
        security: [{ session: [] }],
        response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(OwnNumber) }), ...errors(401, 403) },
      },
    },
    async (req) => {
      const { ownerType, ownerId } = await deps.services.billing.accountOf(sessionOf(req).id);
      return { object: 'list' as const, data: await deps.services.inbound.numbers.ownedBy({ type: ownerType, id: ownerId }) };
    },
  );
}
