// POST /v1/understand (scope intent): classify one conversational turn. The route translates only;
// the metered path is src/intent/service.ts and the session logic machines/intent-session.machine.ts.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { errors, FreeText, KeyString } from '../schemas.ts';

export const UnderstandBodySchema = Type.Object(
  {
    model: KeyString(200),
    // Optional in the schema so that a missing one answers the spec's missing_input, not invalid_request.
    session_id: Type.Optional(KeyString(256)),
    text: Type.Optional(FreeText(4000)),
    language: Type.Optional(KeyString(35)),
    /** Ours: the channel the response reference is for (default text). */
    channel: Type.Optional(Type.Union([Type.Literal('text'), Type.Literal('voice')])),
  },
  { additionalProperties: false },
);

const Decision = Type.Object({ action: Type.String(), next_state: Type.String(), response_id: Type.String() });

const UnderstandResponseSchema = Type.Object({
  model: Type.String(),
  session_id: Type.String(),
  request_id: Type.String(),
  classification: Type.Union([Type.Literal('KNOWN'), Type.Literal('AMBIGUOUS'), Type.Literal('UNKNOWN'), Type.Literal('OUT_OF_SCOPE')]),
  intent: Type.Union([Type.Object({ id: Type.String(), confidence: Type.Number(), band: Type.String() }), Type.Null()]),
  candidate_intents: Type.Array(Type.Object({ id: Type.String(), score: Type.Number(), source: Type.String() })),
  entities: Type.Object({
    amount: Type.Optional(Type.Number()),
    phone: Type.Optional(Type.String()),
    email: Type.Optional(Type.String()),
    date: Type.Optional(Type.String()),
  }),
  dialogue_act: Type.String(),
  decision: Decision,
  response: Type.Object({ response_id: Type.String(), language: Type.String(), channel: Type.String() }),
  classifier_used: Type.String(),
  latency_ms: Type.Integer(),
});

export function registerUnderstandRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/v1/understand',
    {
      preHandler: requireApiKey(deps, 'intent'),
      schema: {
        tags: ['v1'],
        summary: 'Understand one conversational turn (intent, entities, dialogue act, decision)',
        security: [{ apiKey: [] }],
        body: UnderstandBodySchema,
        response: { 200: UnderstandResponseSchema, ...errors(400, 401, 402, 403, 404, 429, 503) },
      },
    },
    async (req) => deps.services.intent.understand(principalOf(req), req.body, req.id),
  );
}
