// buildApp(deps): the HTTP layer. Routes validate input (their schemas also make /openapi.json),
// authorize, then call a service or message an actor; they hold no business rules. Every error,
// including unknown routes, wrong methods, malformed JSON and oversized bodies, leaves through the
// one error handler here in the spec's envelope, with the request id.
import Fastify, { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import { accessLogger, LazyChildLogger } from '../logger.ts';
import { ApiError, echo, readsOnlyOpenAIErrors, REFUSALS, toEnvelope } from './errors.ts';
import { clientErrorHandler } from './client-errors.ts';
import { capConnections } from './connections.ts';
import { newRequestId } from './request-id.ts';
import { parseJsonBody } from './json.ts';
import { lazySchemas } from './lazy-schemas.ts';
import { overheadMs, overheadOnSend, stampOverhead } from './overhead.ts';
import { registerHealthRoutes } from './routes/health.ts';
import { registerPortalAuthRoutes } from './routes/portal-auth.ts';
import { registerPortalOrgRoutes } from './routes/portal-org.ts';
import { registerPortalInvitationRoutes } from './routes/portal-invitations.ts';
import { registerPortalKeyRoutes } from './routes/portal-keys.ts';
import { registerAdminRoutes } from './routes/admin.ts';
import { registerAdminSessionRoutes } from './routes/admin-session.ts';
import { registerPortalBillingRoutes } from './routes/portal-billing.ts';
import { registerAdminBillingRoutes } from './routes/admin-billing.ts';
import { registerV1Routes } from './routes/v1.ts';
import { registerAdminModelRoutes } from './routes/admin-models.ts';
import { registerAdminLimitRoutes } from './routes/admin-limits.ts';
import { registerAdminIntentRoutes } from './routes/admin-intent.ts';
import { registerPortalWebhookRoutes } from './routes/portal-webhooks.ts';
import { registerDashboardRoutes } from './routes/dashboard.ts';
import { registerPortalTranscriptionRoutes } from './routes/portal-transcription.ts';
import { registerPortalVoiceRoutes } from './routes/portal-voice.ts';
import { registerVoiceBatchRoutes } from './routes/v1-voice-batches.ts';
import { registerAdminVoiceNumberRoutes } from './routes/admin-voice-numbers.ts';
import { ActorRuntimeError, MAX_ACTOR_ID_LENGTH } from '../actors/errors.ts';
import { InvalidKeyError, StoreUnavailableError } from '../store/port.ts';
import { STRING_RULES } from '../shared/strings.ts';
import type { App, AppDeps } from './types.ts';

/** /portal and /admin, and anything under them. */
const PRIVATE_PATH = /^\/(portal|admin)(\/|\?|$)/;

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

/**
 * How often Node checks connections against headersTimeout and requestTimeout (its default, 30 s,
 * let a 30 s request timeout fire anywhere up to 60 s); the timeouts hold to within this.
 */
const TIMEOUT_CHECK_MS = 1000;

export async function buildApp(deps: AppDeps): Promise<App> {
  const { config } = deps;
  const schemas = lazySchemas();
  const app = Fastify({
    // Route schemas compile at each route's first use (http/lazy-schemas.ts).
    schemaController: { compilersFactory: schemas.compilersFactory },
    loggerInstance: deps.logger,
    genReqId: newRequestId,
    requestIdHeader: false, // never trust a client-chosen id
    // One access line per request (written in onResponse below), not fastify's two.
    logController: new LogController({ requestIdLogLabel: 'request_id', disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, options) => new LazyChildLogger(logger as Logger, bindings, options),
    bodyLimit: config.http.bodyLimitBytes,
    requestTimeout: config.http.requestTimeoutMs,
    keepAliveTimeout: config.http.keepAliveTimeoutMs,
    http: { headersTimeout: config.http.headersTimeoutMs, requestTimeout: config.http.requestTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_MS },
    // What Node's parser refuses (malformed requests, oversized headers, timeouts) in our envelope, then closed.
    clientErrorHandler: clientErrorHandler({
      newRequestId,
      metrics: deps.metrics,
      logger: deps.logger,
      headersTimeoutMs: config.http.headersTimeoutMs,
      requestTimeoutMs: config.http.requestTimeoutMs,
    }),
    return503OnClosing: false,
    trustProxy: config.http.trustProxy.length > 0 ? config.http.trustProxy : false,
    ajv: {
      // No type coercion (true, [100] or "100" are not 100), unknown fields refused: SECURITY.md,
      // "Hardening: stack defaults we override".
      customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false, useDefaults: true },
    },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    // The router's own refusals (a path that is not percent-encoded UTF-8, a path parameter over
    // maxParamLength) in our envelope, not fastify's.
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id);
      const why = err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'has a segment longer than 200 characters' : 'is not valid percent-encoded UTF-8';
      return sendError(new ApiError('invalid_request', `The URL path ${why}.`), request, reply);
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  capConnections(app.server, config.http, { newRequestId, metrics: deps.metrics });

  app.decorate('compileSchemas', schemas.compileAll);
  app.decorateRequest('principal', null);
  app.decorateRequest('sessionUser', null);
  app.decorateRequest('adminVia', null);
  app.decorateRequest('cancel', null);

  // A shadow router of every (method, path) registered, to answer 405 instead of 404 for a known
  // path called with the wrong method.
  const shadow = FindMyWay();
  app.addHook('onRoute', (route) => {
    // Every /v1 answer says the gateway's own time (overhead.ts): an onSend hook on those routes only.
    if (route.url.startsWith('/v1/')) route.onSend = [...(route.onSend === undefined ? [] : [route.onSend].flat()), overheadOnSend];
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const m of methods.map((x) => String(x).toUpperCase() as 'GET')) {
      if (!shadow.hasRoute(m, route.url)) shadow.on(m, route.url, () => undefined);
    }
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (req, body, done) => {
    // A route that takes no body (a cancel, a hang-up, leaving an organization) takes an empty one
    // whatever its content type says, as `curl -X POST -H 'content-type: application/json'` sends.
    if (body.length === 0 && req.routeOptions.schema?.body === undefined) return done(null, undefined);
    try {
      done(null, parseJsonBody(body, config.http.maxJsonDepth));
    } catch (err) {
      done(err as Error, undefined);
    }
  });

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Portal and admin answers carry secrets and account data: never stored by a browser or proxy.
    if (PRIVATE_PATH.test(request.url)) reply.header('cache-control', 'no-store');
    if (deps.lifecycle.closing) throw new ApiError('shutting_down', 'The gateway is shutting down; retry on another instance.');
  });

  const access = accessLogger(deps.logger);
  // Each /v1 route's overhead histogram, labelled once (the routes are a fixed set).
  const overheadOf = new Map<string, { observe(seconds: number): void }>();
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    const ms = reply.elapsedTime;
    deps.metrics.requests.inc(labels);
    deps.metrics.duration.observe(labels, ms / 1000);
    if (route.startsWith('/v1/')) {
      let overhead = overheadOf.get(route);
      if (overhead === undefined) overheadOf.set(route, (overhead = deps.metrics.overhead.labels({ route })));
      // A stream's whole life: every wait on the upstream is out, everything else is in.
      overhead.observe(overheadMs(request, ms) / 1000);
    }
    access.info({ request_id: request.id, req: request, status: reply.statusCode, ms: Math.round(ms * 100) / 100 }, 'request');
  });

  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => sendError(toApiError(err, request), request, reply));

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    if (path.startsWith('/v1/')) stampOverhead(reply);
    const allowed = METHODS.filter((m) => m !== request.method && shadow.find(m, path) !== null);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(
        new ApiError('method_not_allowed', `Method ${request.method} is not allowed on ${echo(path)}; use ${allowed.join(', ')}.`),
        request,
        reply,
      );
    }
    return sendError(new ApiError('not_found', `No route for ${request.method} ${echo(path)}.`), request, reply);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Inference gateway',
        version: '0.1.0',
        description:
          'Metered AI inference gateway: /v1 model endpoints (API keys), /portal account management (session tokens), /admin operations (ADMIN_TOKEN).',
      },
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key: sk-live-<JWT>' },
          session: {
            type: 'http',
            scheme: 'bearer',
            description: 'Portal session token from /portal/auth/login (the dashboard: the __Host-gw_session cookie)',
          },
          admin: { type: 'http', scheme: 'bearer', description: 'The ADMIN_TOKEN (the dashboard: the __Host-gw_admin operator session cookie)' },
        },
      },
    },
  });

  registerHealthRoutes(app, deps);
  registerPortalAuthRoutes(app, deps);
  registerPortalOrgRoutes(app, deps);
  registerPortalInvitationRoutes(app, deps);
  registerPortalKeyRoutes(app, deps);
  registerAdminRoutes(app, deps);
  registerAdminSessionRoutes(app, deps);
  registerPortalBillingRoutes(app, deps);
  registerAdminBillingRoutes(app, deps);
  registerAdminModelRoutes(app, deps);
  registerAdminLimitRoutes(app, deps);
  registerAdminIntentRoutes(app, deps);
  registerPortalWebhookRoutes(app, deps);
  registerPortalTranscriptionRoutes(app, deps);
  registerPortalVoiceRoutes(app, deps);
  registerVoiceBatchRoutes(app, deps);
  registerAdminVoiceNumberRoutes(app, deps);
  registerV1Routes(app, deps);
  registerDashboardRoutes(app, deps);

  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  return app;
}

function sendError(err: ApiError, request: FastifyRequest, reply: FastifyReply) {
  if (REFUSALS.has(err.code)) request.log.warn({ code: err.code, reason: err.message }, 'request refused');
  else if (err.status >= 500) request.log.error({ err, code: err.code }, 'request failed');
  for (const [k, v] of Object.entries(err.options.headers ?? {})) reply.header(k, v);
  return reply
    .code(err.status)
    .type('application/json')
    .send(toEnvelope(err, request.id, { sdk: readsOnlyOpenAIErrors(request.headers) }));
}

/** Maps whatever was thrown to an ApiError: ours pass through, fastify's get a stable code, the rest is masked. */
export function toApiError(err: unknown, request: FastifyRequest): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof ActorRuntimeError) return actorError(err, request);
  // A key the store refused (the route schemas refuse such strings first: this is the backstop).
  if (err instanceof InvalidKeyError) return new ApiError('invalid_request', 'An id in the request holds a NUL character or an unpaired surrogate.');
  // A write refused while the store's commits fail (a full disk): nothing of it was kept.
  if (err instanceof StoreUnavailableError)
    return new ApiError(
      'store_unavailable',
      'The gateway cannot record this right now (its store refuses writes); nothing was changed. Retry after a short wait.',
    );
  const fe = err as FastifyError & { validationContext?: string };
  if (fe.validation && fe.validation.length > 0) return validationError(fe.validation, fe.validationContext ?? 'body');
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('body_too_large', `Request body is larger than this route accepts (${request.routeOptions.bodyLimit ?? 'limit'} bytes).`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError(
        'unsupported_media_type',
        `Content-Type ${echo(request.headers['content-type'] ?? '(none)')} is not accepted here; send application/json.`,
      );
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('invalid_json', 'Request body is not valid JSON.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_request', 'Content-Length does not match the body.');
    default:
      break;
  }
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    return new ApiError('invalid_request', fe.message);
  }
  request.log.error({ err }, 'unhandled error');
  return new ApiError('internal_error', 'The gateway failed to process the request; it has been logged with this request id.');
}

/** Runtime failures keep their code; messages never name instances or internals. */
function actorError(err: ActorRuntimeError, request: FastifyRequest): ApiError {
  switch (err.code) {
    case 'not_found':
      return new ApiError('not_found', 'No such object.');
    case 'revision_conflict':
      return new ApiError('revision_conflict', 'The object was changed concurrently; retry the request.');
    case 'actor_busy':
      return new ApiError('actor_busy', 'The object is busy on another instance; retry shortly.', { headers: { 'retry-after': '1' } });
    case 'shutting_down':
      return new ApiError('shutting_down', 'The gateway is shutting down; retry on another instance.');
    case 'invalid_request':
      return new ApiError('invalid_request', `The object id is not valid: 1 to ${MAX_ACTOR_ID_LENGTH} characters, no NUL character, no unpaired surrogate.`);
    case 'actor_state_too_large':
      return new ApiError('actor_state_too_large', 'This request would grow the object past its size limit; it was not applied.');
    default:
      request.log.error({ err }, 'actor runtime failure');
      return new ApiError('internal_error', 'The gateway failed to process the request; it has been logged with this request id.');
  }
}

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  /** Set when the error is about a key of the object at instancePath (`propertyNames`). */
  propertyName?: string;
}

/**
 * The first error names the field. When a union failed (ajv lists each branch's error, then the
 * `anyOf`), the branch that got deepest into the value is the one the client meant (an image part
 * in a parts array, not "content must be string"); on a tie, the later branch. A choice of
 * constants (a union of literals) lists them all.
 */
function validationError(errors: AjvError[], context: string): ApiError {
  let e = errors[0]!;
  if (errors.some((x) => x.keyword === 'anyOf')) {
    const depth = (x: AjvError) => x.instancePath.split('/').length;
    for (const x of errors) if (x.keyword !== 'anyOf' && depth(x) >= depth(e)) e = x;
  }
  const path = e.instancePath.replace(/^\//, '').replaceAll('/', '.');
  const where = context === 'body' ? '' : `${context} `;
  if (e.keyword === 'required') {
    const field = [path, String(e.params.missingProperty)].filter(Boolean).join('.');
    return new ApiError('missing_input', `Missing required ${where}field '${field}'.`, { param: field });
  }
  if (e.keyword === 'additionalProperties') {
    const field = echo([path, String(e.params.additionalProperty)].filter(Boolean).join('.'));
    return new ApiError('invalid_request', `Unknown ${where}field '${field}'.`, { param: field });
  }
  const field = path || context;
  if (e.propertyName !== undefined) {
    // A map's key that breaks the rule for keys (logit_bias takes token ids).
    return new ApiError('invalid_request', `Invalid ${where}field '${field}': key '${echo(e.propertyName)}' ${e.message ?? 'is not valid'}.`, { param: field });
  }
  const rule = e.keyword === 'pattern' ? STRING_RULES.get(String(e.params.pattern)) : undefined;
  if (rule) return new ApiError('invalid_request', `Invalid ${where}field '${field}': ${rule}.`, { param: field });
  if (e.keyword === 'const') {
    const allowed = errors.filter((x) => x.keyword === 'const' && x.instancePath === e.instancePath).map((x) => JSON.stringify(x.params.allowedValue));
    return new ApiError('invalid_request', `Invalid ${where}field '${field}': must be ${allowed.length > 1 ? `one of ${allowed.join(', ')}` : allowed[0]}.`, {
      param: field,
    });
  }
  return new ApiError('invalid_request', `Invalid ${where}field '${field}': ${e.message ?? 'invalid value'}.`, { param: field });
}
