// The HTTP edge's types: the fastify instance the routes register on (`App`), what buildApp is given
// (`AppDeps`: config, logger, metrics, services, lifecycle, open streams) and what each request
// carries once authenticated. Routes, auth and uploads take them from here, not from app.ts, so
// buildApp's imports of every route make no import cycle.
import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { HttpMetrics } from './metrics.ts';
import type { OpenStreams } from './open-streams.ts';
import type { Services } from '../composition.ts';
import type { ApiKeyPrincipal } from '../identity/keys.ts';
import type { SessionUser } from '../identity/accounts.ts';
import type { Cancel } from '../providers/cancel.ts';

export type App = FastifyInstance<
  import('node:http').Server,
  import('node:http').IncomingMessage,
  import('node:http').ServerResponse,
  Logger,
  TypeBoxTypeProvider
>;

declare module 'fastify' {
  interface FastifyInstance {
    /** Compiles every route schema not compiled yet (they compile at first use: http/lazy-schemas.ts); how many. */
    compileSchemas(): number;
  }
  interface FastifyRequest {
    /** Set by the API-key preHandler on /v1 routes. */
    principal: ApiKeyPrincipal | null;
    /** Set by the session preHandler on /portal routes. */
    sessionUser: SessionUser | null;
    /** How requireAdmin authenticated: the admin token or the dashboard's operator session. */
    adminVia: 'bearer' | 'cookie' | null;
    /** The request's upstream cancellation, once a route made one (http/disconnect.ts); it also counts the upstream wait. */
    cancel: Cancel | null;
  }
}

/** What the routes may read about the process: readiness of the store and of the actor runtime. */
export interface Lifecycle {
  closing: boolean;
  ready(): Promise<{ ready: boolean; checks: Record<string, string> }>;
}

export interface AppDeps {
  config: Config;
  logger: Logger;
  metrics: HttpMetrics;
  services: Services;
  lifecycle: Lifecycle;
  /** Hijacked responses (SSE, raw audio) that shutdown ends after its grace. */
  streams: OpenStreams;
}
