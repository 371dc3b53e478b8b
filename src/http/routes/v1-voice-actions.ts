// What a call's owner does to a call in progress, and the account's room for calls (scope `voice`):
//   POST /v1/voice/calls/{id}/transfer {to, mode: "cold"}  hand the callee to a person (src/voice/transfer.ts)
//   POST /v1/voice/calls/{id}/dtmf {digits}                keys the agent sends, as tones (src/voice/dtmf.ts)
//   GET  /v1/voice/concurrency                             {in_progress, limit}: the account's calls not ended, its limit
// The routes translate only; the rules are src/voice/service.ts's.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { Closed, errors, KeyString } from '../schemas.ts';
import { DIGITS_PATTERN } from '../../voice/dtmf.ts';
import { Call } from './v1-voice.ts';

const CallId = Type.Object({ id: KeyString(64) });

export function registerCallActionRoutes(app: App, deps: AppDeps): void {
  // The wallet whose calls the key sees (an organization member's: the organization's), as on the other call routes.
  const account = async (req: Parameters<typeof principalOf>[0]) => (await deps.services.billing.payerFor(principalOf(req))).walletId;
  const preHandler = requireApiKey(deps, 'voice');
  const security = [{ apiKey: [] }];
  app.post(
    '/v1/voice/calls/:id/transfer',
    {
      preHandler,
      schema: {
        tags: ['v1'],
        summary: 'Hand a call in progress to a person at another number (a cold transfer): the agent says its hand-off line, then the carrier bridges',
        security,
        params: CallId,
        body: Closed({
          to: Type.String({ minLength: 1, maxLength: 32, description: "E.164, in one of the voice model's countries (as a call's `to`)" }),
          mode: Type.Literal('cold', { description: 'Only cold transfers: the agent leaves the call once the carrier bridges it.' }),
        }),
        response: { 202: Call, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await deps.services.voice.transfer(await account(req), req.params.id, req.body.to)),
  );

  app.post(
    '/v1/voice/calls/:id/dtmf',
    {
      preHandler,
      schema: {
        tags: ['v1'],
        summary: "Keys the agent sends on a call in progress (a phone menu's), played in-band as tones after what the agent is saying",
        security,
        params: CallId,
        body: Closed({ digits: Type.String({ pattern: DIGITS_PATTERN, description: '0-9, *, #, A-D; w: a 0.5 s pause' }) }),
        response: { 202: Call, ...errors(400, 401, 403, 404, 409) },
      },
    },
    async (req, reply) => reply.code(202).send(await deps.services.voice.dtmf(await account(req), req.params.id, req.body.digits)),
  );

  app.get(
    '/v1/voice/concurrency',
    {
      preHandler,
      schema: {
        tags: ['v1'],
        summary: "How many of the account's calls have not ended, against its limit of calls at once",
        security,
        response: { 200: Type.Object({ in_progress: Type.Integer(), limit: Type.Integer() }), ...errors(401, 403) },
      },
    },
    async (req) => deps.services.voice.concurrency(await account(req)),
  );
}
