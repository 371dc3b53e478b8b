// Model endpoints under /v1, authenticated by API key with the endpoint's scope.
import { Type } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { errors, KeyString } from '../schemas.ts';
import { publicModel } from '../../models/catalog.ts';
import { registerChatRoutes } from './v1-chat.ts';
import { registerResponsesRoutes } from './v1-responses.ts';
import { registerEmbeddingsRoutes } from './v1-embeddings.ts';
import { registerUnderstandRoutes } from './v1-understand.ts';
import { registerAudioRoutes } from './v1-audio.ts';
import { registerSpeechRoutes } from './v1-speech.ts';
import { registerVoiceRoutes } from './v1-voice.ts';
import { registerCallActionRoutes } from './v1-voice-actions.ts';
import { registerExotelVoicebotRoute } from './v1-voice-exotel.ts';
import { registerInboundVoiceRoutes } from './v1-voice-inbound.ts';

/** A model as GET /v1/models lists it. */
export const ModelEntry = Type.Object({
  id: Type.String(),
  object: Type.Literal('model'),
  created: Type.Integer(),
  owned_by: Type.String(),
  type: Type.String(),
  reasoning: Type.Optional(Type.Boolean()),
  tools: Type.Optional(Type.Boolean()),
  languages: Type.Optional(Type.Array(Type.String())),
  streaming: Type.Optional(Type.Boolean()),
  modes: Type.Optional(Type.Array(Type.String())),
  timestamps: Type.Optional(Type.String()),
  jobs: Type.Optional(Type.Boolean()),
  diarization: Type.Optional(Type.Boolean()),
  voices: Type.Optional(Type.Array(Type.String())),
  max_input_chars: Type.Optional(Type.Integer()),
  countries: Type.Optional(Type.Array(Type.String())),
  price_per_minute_cents: Type.Optional(Type.Number()),
  max_duration_seconds: Type.Optional(Type.Integer()),
  features: Type.Optional(Type.Array(Type.String())),
  agent_tools: Type.Optional(Type.Array(Type.String())),
});

export function registerV1Routes(app: App, deps: AppDeps): void {
  app.get(
    '/v1/models',
    {
      preHandler: requireApiKey(deps, 'models'),
      schema: {
        tags: ['v1'],
        summary: 'Models active on your account',
        security: [{ apiKey: [] }],
        response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(ModelEntry) }), ...errors(401, 403) },
      },
    },
    async (req) => {
      const { walletId } = await deps.services.billing.accountOf(principalOf(req).userId);
      return { object: 'list' as const, data: (await deps.services.models.activeFor(walletId)).map(publicModel) };
    },
  );

  // OpenAI's "retrieve model". Ids may hold a slash ("meta-llama/..."), sent percent-encoded (the
  // documented route) or raw (a hidden wildcard route with the same handler).
  const retrieve = async (req: FastifyRequest, id: string) => {
    const { walletId } = await deps.services.billing.accountOf(principalOf(req).userId);
    return publicModel(await deps.services.models.resolve(id, null, walletId));
  };
  const retrieveSchema = {
    tags: ['v1'],
    summary: 'One model, if it is active on your account',
    security: [{ apiKey: [] }],
    response: { 200: ModelEntry, ...errors(401, 403, 404) },
  };
  app.get(
    '/v1/models/:model',
    { preHandler: requireApiKey(deps, 'models'), schema: { ...retrieveSchema, params: Type.Object({ model: KeyString(200) }) } },
    async (req) => retrieve(req, req.params.model),
  );
  app.get(
    '/v1/models/*',
    { preHandler: requireApiKey(deps, 'models'), schema: { ...retrieveSchema, hide: true, params: Type.Object({ '*': KeyString(600) }) } },
    // The router has percent-decoded the path once already (find-my-way decodes `*` too).
    async (req) => retrieve(req, req.params['*']),
  );

  registerChatRoutes(app, deps);
  registerResponsesRoutes(app, deps);
  registerEmbeddingsRoutes(app, deps);
  registerUnderstandRoutes(app, deps);
  registerAudioRoutes(app, deps);
  registerSpeechRoutes(app, deps);
  registerVoiceRoutes(app, deps);
  registerCallActionRoutes(app, deps);
  registerExotelVoicebotRoute(app, deps);
  registerInboundVoiceRoutes(app, deps);
}
