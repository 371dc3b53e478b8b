// Operational endpoints: liveness, readiness (store reachable, actors restored) and metrics.
import type { App, AppDeps } from '../types.ts';
import { ApiError } from '../errors.ts';
import { METRICS_TOKEN_REFUSED, metricsAuthorized } from '../metrics-server.ts';

export function registerHealthRoutes(app: App, deps: AppDeps): void {
  app.get('/healthz', { schema: { tags: ['ops'], summary: 'The process is up' } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { schema: { tags: ['ops'], summary: 'The store answers and actors are restored' } }, async (_req, reply) => {
    const { ready, checks } = await deps.lifecycle.ready();
    if (!ready) {
      const failing = Object.entries(checks)
        .filter(([, v]) => v !== 'ok')
        .map(([k, v]) => `${k}: ${v}`)
        .join('; ');
      throw new ApiError('not_ready', `Not ready: ${failing}`);
    }
    return reply.send({ status: 'ready', checks });
  });

  // On the API port only when configured so (metrics.listen "api"), and then behind the metrics
  // token; by default a listener of its own serves it (src/http/metrics-server.ts).
  const { listen, token } = deps.config.metrics;
  if (listen !== 'api') return;
  app.get('/metrics', { schema: { tags: ['ops'], summary: 'Prometheus metrics (Authorization: Bearer <metrics token>)' } }, async (req, reply) => {
    if (!metricsAuthorized(req.headers.authorization, token)) throw METRICS_TOKEN_REFUSED();
    reply.type(deps.metrics.registry.contentType);
    return deps.metrics.registry.metrics();
  });
}
