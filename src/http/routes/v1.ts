// Model endpoints under /v1, authenticated by API key with the endpoint's scope.
import { Type } from 'typebox';
import type { App, AppDeps } from '../app.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { errors } from '../schemas.ts';
import { publicModel } from '../../models/catalog.ts';
import { registerChatRoutes } from './v1-chat.ts';
import { registerEmbeddingsRoutes } from './v1-embeddings.ts';
import { registerUnderstandRoutes } from './v1-understand.ts';

export function registerV1Routes(app: App, deps: AppDeps): void {
  const ModelEntry = Type.Object({
    id: Type.String(),
    object: Type.Literal('model'),
    created: Type.Integer(),
    owned_by: Type.String(),
    type: Type.String(),
    reasoning: Type.Optional(Type.Boolean()),
    languages: Type.Optional(Type.Array(Type.String())),
    streaming: Type.Optional(Type.Boolean()),
    voices: Type.Optional(Type.Array(Type.String())),
  });

  app.get(
    '/v1/models',
    {
      preHandler: requireApiKey(deps, 'models'),
      schema: {
        tags: ['v1'], summary: 'Models active on your account', security: [{ apiKey: [] }],
        response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(ModelEntry) }), ...errors(401, 403) },
      },
    },
    async (req) => {
      const { walletId } = await deps.services.billing.accountOf(principalOf(req).userId);
      return { object: 'list' as const, data: (await deps.services.models.activeFor(walletId)).map(publicModel) };
    },
  );

  // OpenAI's "retrieve model". Ids may hold a slash ("meta-llama/..."): the rest of the path is the
  // id, sent raw or percent-encoded as clients do.
  app.get(
    '/v1/models/*',
    {
      preHandler: requireApiKey(deps, 'models'),
      schema: {
        tags: ['v1'], summary: 'One model, if it is active on your account', security: [{ apiKey: [] }],
        params: Type.Object({ '*': Type.String({ maxLength: 600 }) }),
        response: { 200: ModelEntry, ...errors(401, 403, 404) },
      },
    },
    async (req) => {
      const { walletId } = await deps.services.billing.accountOf(principalOf(req).userId);
      const id = decodeModelId((req.params as { '*': string })['*']);
      return publicModel(await deps.services.models.resolve(id, null, walletId));
    },
  );

  registerChatRoutes(app, deps);
  registerEmbeddingsRoutes(app, deps);
  registerUnderstandRoutes(app, deps);
}

/** A path's model id, percent-decoded once; undecodable text stays as sent (and is not found). */
function decodeModelId(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
