// The numbers inbound calls come in on (src/voice/numbers.ts), as an operator assigns them: each to a
// voice model (whose carrier route receives its calls) and an account (which pays for them), with
// the agent, first message, language and voice its calls are answered with (as POST
// /v1/voice/call takes them). And a way to ring one from the simulator (a call placed *to* the
// gateway, the simulator's caller following its script).
//   PUT    /admin/voice/numbers/{number}   assign (201) or re-assign (200)
//   GET    /admin/voice/numbers[/{number}]
//   DELETE /admin/voice/numbers/{number}
//   POST   /admin/voice/simulator/calls    {to, from}: the simulator's caller at `from` rings `to`
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { requireAdmin } from '../auth.ts';
import { ApiError } from '../errors.ts';
import { Closed, errors } from '../schemas.ts';
import { CALLER_ID_PATTERN } from '../../shared/phones.ts';
import { VoiceCallBodySchema } from './v1-voice.ts';

const NumberParam = Closed({ number: Type.String({ pattern: CALLER_ID_PATTERN }) });
const call = VoiceCallBodySchema.properties;
/** How a number's calls are answered, as POST /v1/voice/call takes it (all optional: the model's defaults); its owner reads the same (portal-voice.ts). */
export const NumberAnswering = {
  agent: call.agent,
  first_message: call.first_message,
  language: call.language,
  voice: call.voice,
  max_duration_seconds: call.max_duration_seconds,
  webhook_id: call.webhook_id,
};
const NumberBody = Closed({
  model: call.model,
  owner: Closed({ type: Type.Union([Type.Literal('user'), Type.Literal('org')]), id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) }),
  ...NumberAnswering,
});
const Any = Type.Object({}, { additionalProperties: true });

export function registerAdminVoiceNumberRoutes(app: App, deps: AppDeps): void {
  const base = { preHandler: requireAdmin(deps) };
  const tags = ['admin'];
  const security = [{ admin: [] }];
  const numbers = () => deps.services.inbound.numbers;

  app.put(
    '/admin/voice/numbers/:number',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'Assign a phone number to a voice model and the account its inbound calls are billed to',
        params: NumberParam,
        body: NumberBody,
        response: { 200: Any, 201: Any, ...errors(400, 401, 403) },
      },
    },
    async (req, reply) => {
      const { number, created } = await numbers().put(req.params.number, req.body);
      return reply.code(created ? 201 : 200).send(number);
    },
  );

  app.get(
    '/admin/voice/numbers',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: 'The numbers inbound calls come in on',
        response: { 200: Type.Object({ data: Type.Array(Any) }), ...errors(401, 403) },
      },
    },
    async () => ({ data: await numbers().list() }),
  );

  app.get(
    '/admin/voice/numbers/:number',
    { ...base, schema: { tags, security, summary: 'One inbound number', params: NumberParam, response: { 200: Any, ...errors(400, 401, 403, 404) } } },
    async (req) => {
      const found = await numbers().get(req.params.number);
      if (!found) throw new ApiError('not_found', `No number '${req.params.number}'.`);
      return found;
    },
  );

  app.delete(
    '/admin/voice/numbers/:number',
    { ...base, schema: { tags, security, summary: 'Release an inbound number', params: NumberParam, response: { 200: Any, ...errors(400, 401, 403, 404) } } },
    async (req) => {
      if (!(await numbers().remove(req.params.number))) throw new ApiError('not_found', `No number '${req.params.number}'.`);
      return { number: req.params.number, deleted: true };
    },
  );

  app.post(
    '/admin/voice/simulator/calls',
    {
      ...base,
      schema: {
        tags,
        security,
        summary: "The simulator's caller at `from` rings the gateway's number `to` (an inbound call)",
        body: Closed({ to: Type.String({ pattern: CALLER_ID_PATTERN }), from: Type.String({ pattern: CALLER_ID_PATTERN }) }),
        response: { 200: Any, ...errors(400, 401, 403) },
      },
    },
    async (req) => deps.services.inbound.simulator(req.body),
  );
}
