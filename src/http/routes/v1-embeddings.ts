// POST /v1/embeddings: OpenAI-compatible. The metered path is src/text/embeddings.ts.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { errors, KeyString } from '../schemas.ts';
import { cancelOnDisconnect } from '../disconnect.ts';

const Text = Type.String({ maxLength: 1_000_000 });
// Token ids (as LangChain's OpenAIEmbeddings sends by default): the upstream tokenizer's, unchecked
// beyond being non-negative 32-bit integers.
const Tokens = Type.Array(Type.Integer({ minimum: 0, maximum: 4_294_967_295 }), { maxItems: 1_000_000 });

export function registerEmbeddingsRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/v1/embeddings',
    {
      preHandler: requireApiKey(deps, 'embeddings'),
      bodyLimit: deps.config.http.inferenceBodyLimitBytes,
      schema: {
        tags: ['v1'],
        summary: 'Embeddings (OpenAI-compatible)',
        security: [{ apiKey: [] }],
        body: Type.Object(
          {
            model: KeyString(200),
            input: Type.Union([Text, Type.Array(Text, { maxItems: 2048 }), Tokens, Type.Array(Tokens, { maxItems: 2048 })]),
            encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
            dimensions: Type.Optional(Type.Integer({ minimum: 1, maximum: 65_536 })),
            user: Type.Optional(KeyString(256)),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            object: Type.Literal('list'),
            data: Type.Array(
              Type.Object({ object: Type.Literal('embedding'), index: Type.Integer(), embedding: Type.Union([Type.Array(Type.Number()), Type.String()]) }),
            ),
            model: Type.String(),
            usage: Type.Object({ prompt_tokens: Type.Integer(), total_tokens: Type.Integer() }),
          }),
          ...errors(400, 401, 402, 403, 404, 429, 503),
        },
      },
    },
    async (req, reply) => {
      return deps.services.embeddings.embed(principalOf(req), req.body, req.id, cancelOnDisconnect(reply));
    },
  );
}
