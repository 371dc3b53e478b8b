// Operational endpoints: liveness, readiness (store reachable, actors restored) and metrics.
import type { App, AppDeps } from '../app.ts';
import { ApiError } from '../errors.ts';

export function registerHealthRoutes(app: App, deps: AppDeps): void {
  app.get('/healthz', { schema: { tags: ['ops'], summary: 'The process is up' } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { tags: ['ops'], summary: 'The store answers and actors are restored' } }, async (_req, reply) => {
    const { ready, checks } = await deps.lifecycle.ready();
    if (!ready) {
      const failing = Object.entries(checks).filter(([, v]) => v !== 'ok').map(([k, v]) => `${k}: ${v}`).join('; ');
      throw new ApiError('not_ready', `Not ready: ${failing}`);
    }
    return reply.send({ status: 'ready', checks });
  });

  app.get('/metrics', { schema: { tags: ['ops'], summary: 'Prometheus metrics' } }, async (_req, reply) => {
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
