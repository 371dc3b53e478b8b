// GET /metrics on a listener of its own (config `metrics.listen`, 127.0.0.1:9464 by default), the
// Prometheus convention: the scrape port stays off the API port, which faces clients. A plain
// node:http server: one route, the error envelope for anything else, short timeouts.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Registry } from 'prom-client';
import { ApiError, toEnvelope } from './errors.ts';
import { newRequestId } from './request-id.ts';

export interface MetricsServer {
  /** http://host:port of the listener. */
  url: string;
  close(): Promise<void>;
}

/** Whether an Authorization header carries the metrics token (always, when none is configured). */
export function metricsAuthorized(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = /^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? '';
  // Hashes have equal lengths, so the comparison takes the same time whatever was sent.
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(token));
}

export const METRICS_TOKEN_REFUSED = (): ApiError =>
  new ApiError('invalid_metrics_token', 'GET /metrics needs Authorization: Bearer <metrics token>.', { headers: { 'www-authenticate': 'Bearer' } });

/** `host:port` or `[v6]:port` as listen() takes it. */
export function parseListen(listen: string): { host: string; port: number } {
  const colon = listen.lastIndexOf(':');
  return { host: listen.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(listen.slice(colon + 1)) };
}

export async function startMetricsServer(opts: { listen: string; token: string | undefined; registry: Registry }): Promise<MetricsServer> {
  const { registry, token } = opts;
  const fail = (res: ServerResponse, err: ApiError) => {
    const id = newRequestId();
    res.writeHead(err.status, { 'content-type': 'application/json; charset=utf-8', 'x-request-id': id, ...err.options.headers });
    res.end(JSON.stringify(toEnvelope(err, id)));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return fail(res, new ApiError('not_found', `No route for ${req.method} ${path}; this listener serves GET /metrics.`));
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return fail(res, new ApiError('method_not_allowed', `Method ${req.method} is not allowed on /metrics; use GET.`, { headers: { allow: 'GET, HEAD' } }));
    }
    if (!metricsAuthorized(req.headers.authorization, token)) return fail(res, METRICS_TOKEN_REFUSED());
    const text = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'x-request-id': newRequestId() });
    res.end(req.method === 'HEAD' ? undefined : text);
  };
  const server = createServer({ headersTimeout: 5000, requestTimeout: 10_000, connectionsCheckingInterval: 1000 }, (req, res) => {
    handle(req, res).catch(() => fail(res, new ApiError('internal_error', 'Collecting the metrics failed.')));
  });
  const { host, port } = parseListen(opts.listen);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
