// Model endpoints under /v1, authenticated by API key with the endpoint's scope.
import { Type } from 'typebox';
import type { App, AppDeps } from '../app.ts';
import { requireApiKey } from '../auth.ts';
import { errors } from '../schemas.ts';

export function registerV1Routes(app: App, deps: AppDeps): void {
  app.get(
    '/v1/models',
    {
      preHandler: requireApiKey(deps, 'models'),
      schema: {
        tags: ['v1'], summary: 'Models active on your account', security: [{ apiKey: [] }],
        response: { 200: Type.Object({ object: Type.Literal('list'), data: Type.Array(Type.Record(Type.String(), Type.Unknown())) }), ...errors(401, 403) },
      },
    },
    async () => ({ object: 'list' as const, data: [] as Record<string, unknown>[] }),
  );
}
