// Voice batches (campaigns, scope `voice`): the routes translate only; the rules are
// src/voice/batches/service.ts, the pacing its actor's (src/voice/batches/pacing.ts).
//   POST /v1/voice/batches                      → 201 a batch; Idempotency-Key for 24 h
//   GET  /v1/voice/batches[/{id}]               the account's batches; one with its rows paged by index
//   POST /v1/voice/batches/{id}/pause|resume|cancel
//   GET  /v1/voice/batches/{id}/results         text/csv, one line per number
// The same under /portal/voice/batches with the session in place of a key (registerBatchRoutes),
// plus POST /portal/voice/batches/estimate (the dashboard's cost range before starting).
import { Type, type TSchema } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey, requireSession, sessionOf } from '../auth.ts';
import { Closed, CursorList, errors, FreeText, KeyString, OneOf } from '../schemas.ts';
import { ApiError } from '../../errors.ts';
import { documented } from '../openapi.ts';
import { dashboardPrincipal, type ApiKeyPrincipal } from '../../identity/keys.ts';
import { VoiceCallBodySchema } from './v1-voice.ts';
import { ROW_STATUSES } from '../../voice/batches/rows.ts';
import { DAYS } from '../../voice/batches/window.ts';
import { RETRYABLE } from '../../voice/batches/pacing.ts';

const StringMap = (maxKeys: number, maxChars: number) =>
  Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), FreeText(maxChars), { maxProperties: maxKeys });
const HHMM = Type.String({ pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$' });
const { to: _to, variables, metadata, ...perBatch } = VoiceCallBodySchema.properties;
const Window = Closed({
  time_zone: Type.String({ minLength: 1, maxLength: 64 }),
  days: Type.Array(OneOf(DAYS), { minItems: 1, maxItems: 7 }),
  start: HHMM,
  end: HHMM,
});
const Retry = Closed({
  on: Type.Optional(Type.Array(OneOf(RETRYABLE), { maxItems: 4 })),
  max_attempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
  min_gap_seconds: Type.Optional(Type.Integer({ minimum: 60, maximum: 86_400 })),
});

/** Every field of POST /v1/voice/call that is not per number (so a field the call gains, the batch gains), and the batch's own. */
export const BatchBodySchema = Closed({
  ...perBatch,
  name: Type.Optional(FreeText(200)),
  calls: Type.Array(Closed({ to: Type.String({ minLength: 1, maxLength: 32 }), variables, metadata }), { minItems: 1, maxItems: 10_000 }),
  window: Type.Optional(Window),
  max_concurrent: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
  retry: Type.Optional(Retry),
  start_at: Type.Optional(Type.Integer({ minimum: 0, maximum: 32_503_680_000 })),
  metadata: Type.Optional(StringMap(16, 500)),
});

const Nullable = (t: TSchema) => Type.Union([t, Type.Null()]);
const N = Type.Integer();
const Counts = Type.Object({ total: N, queued: N, in_progress: N, completed: N, busy: N, no_answer: N, failed: N, voicemail: N, canceled: N, invalid: N });
const ErrorShape = Type.Object({ code: Type.String(), message: Type.String() });
const Batch = Type.Object({
  id: Type.String(),
  object: Type.Literal('voice.batch'),
  name: Nullable(Type.String()),
  model: Type.String(),
  status: Type.String({ description: 'scheduled, running, waiting_window, paused, cancelling, canceled, completed' }),
  paused_reason: Nullable(Type.String({ description: 'api or insufficient_credit, while paused' })),
  created_at: Type.Integer(),
  start_at: Type.Integer(),
  started_at: Nullable(Type.Integer()),
  ended_at: Nullable(Type.Integer()),
  next_window_at: Nullable(Type.Integer({ description: 'Unix seconds: when the window opens again (waiting_window).' })),
  window: Window,
  max_concurrent: Type.Integer(),
  retry: Type.Object({ on: Type.Array(Type.String()), max_attempts: Type.Integer(), min_gap_seconds: Type.Integer() }),
  counts: Counts,
  rejected: Type.Array(Type.Object({ index: Type.Integer(), to: Type.String(), error: ErrorShape })),
  cost_cents: Type.Number(),
  metadata: Type.Record(Type.String(), Type.String()),
});
const Row = Type.Object({
  index: Type.Integer(),
  to: Type.String(),
  variables: Type.Record(Type.String(), Type.String()),
  metadata: Type.Record(Type.String(), Type.String()),
  status: Type.String(),
  attempts: Type.Array(
    Type.Object({
      call_id: Nullable(Type.String()),
      status: Type.String(),
      end_reason: Nullable(Type.String()),
      started_at: Nullable(Type.Integer()),
      ended_at: Nullable(Type.Integer()),
      billed_seconds: Nullable(Type.Integer()),
      cost_cents: Nullable(Type.Number()),
    }),
  ),
  next_attempt_at: Nullable(Type.Integer()),
  final_call_id: Nullable(Type.String()),
  analysis: Type.Unknown({
    description: "What the row keeps of its final call's analysis: {status, source, summary, fields, intent} (null when it has none; the whole on the call).",
  }),
  error: Type.Optional(ErrorShape),
});
const BatchWithRows = Type.Object({
  ...Batch.properties,
  calls: CursorList(Row, Type.Integer()),
});
const BatchId = Type.Object({ id: KeyString(64) });
const IdempotencyKey = Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$' });

export interface BatchEdge {
  prefix: '/v1' | '/portal';
  preHandler: ReturnType<typeof requireApiKey>;
  security: { [name: string]: string[] }[];
  tags: string[];
  /** Whose batches (the payer's wallet id) and who places their calls. */
  account(req: FastifyRequest): Promise<string>;
  principal(req: FastifyRequest): ApiKeyPrincipal;
}

export function registerBatchRoutes(app: App, deps: AppDeps, edge: BatchEdge): void {
  const { prefix, preHandler, security, tags, account } = edge;
  const batches = () => deps.services.voiceBatches;
  const bodyLimit = deps.config.http.inferenceBodyLimitBytes * 16; // 10,000 numbers with their variables
  app.post(
    `${prefix}/voice/batches`,
    {
      preHandler,
      bodyLimit,
      schema: {
        tags,
        summary: 'Create a batch of outbound AI voice calls (a campaign)',
        security,
        body: BatchBodySchema,
        headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) }),
        response: { 200: Batch, 201: Batch, ...errors(400, 401, 403, 404, 409, 413) },
      },
    },
    async (req, reply) => {
      const key = req.headers['idempotency-key'];
      const { created, batch } = await batches().create(edge.principal(req), req.body, typeof key === 'string' ? key : undefined);
      return reply
        .code(created ? 201 : 200)
        .header('location', `/v1/voice/batches/${batch.id}`)
        .send(batch);
    },
  );

  app.get(
    `${prefix}/voice/batches`,
    {
      preHandler,
      schema: {
        tags,
        summary: "The account's batches, newest first (after: the previous page's last_id)",
        security,
        querystring: Type.Object(
          { limit: Type.Optional(Type.String({ pattern: '^(100|[1-9][0-9]?)$' })), after: Type.Optional(KeyString(64)) },
          { additionalProperties: false },
        ),
        response: {
          200: CursorList(Batch, Type.String()),
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => batches().list(await account(req), { limit: Number(req.query.limit ?? 20), ...(req.query.after ? { after: req.query.after } : {}) }),
  );

  app.get(
    `${prefix}/voice/batches/:id`,
    {
      preHandler,
      schema: {
        tags,
        summary: 'A batch: its counts, and its numbers paged by index',
        security,
        params: BatchId,
        querystring: Type.Object(
          {
            limit: Type.Optional(Type.String({ pattern: '^(1000|[1-9][0-9]{0,2})$' })),
            after: Type.Optional(Type.String({ pattern: '^[0-9]{1,5}$' })),
            status: Type.Optional(OneOf(ROW_STATUSES)),
          },
          { additionalProperties: false },
        ),
        response: { 200: BatchWithRows, ...errors(400, 401, 403, 404) },
      },
    },
    async (req) => {
      const q = req.query;
      return batches().get(await account(req), req.params.id, {
        limit: Number(q.limit ?? 100),
        ...(q.after !== undefined ? { after: Number(q.after) } : {}),
        ...(q.status ? { status: q.status } : {}),
      });
    },
  );

  for (const what of ['pause', 'resume', 'cancel'] as const) {
    app.post(
      `${prefix}/voice/batches/:id/${what}`,
      {
        preHandler,
        schema: {
          tags,
          summary:
            what === 'cancel'
              ? 'Cancel a batch: numbers not dialled are canceled, calls in progress finish'
              : `${what === 'pause' ? 'Pause' : 'Resume'} a batch`,
          security,
          params: BatchId,
          response: { 200: Batch, ...errors(401, 403, 404, 409) },
        },
      },
      async (req) => {
        if (req.body !== undefined && req.body !== null && Object.keys(req.body).length > 0) throw new ApiError('invalid_request', `${what} takes no body.`);
        return batches().control(await account(req), req.params.id, what);
      },
    );
  }

  app.get(
    `${prefix}/voice/batches/:id/results`,
    {
      preHandler,
      schema: {
        tags,
        summary: "A batch's results as CSV, one line per number",
        security,
        params: BatchId,
        response: { ...errors(401, 403, 404) },
      },
      ...documented({ responses: { 200: { description: 'One line per number (RFC 4180)', content: { 'text/csv': Type.String() } } } }),
    },
    async (req, reply) => {
      const csv = await batches().results(await account(req), req.params.id);
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${req.params.id}.csv"`)
        .send(csv as never); // text, not the JSON schemas
    },
  );
}

export function registerVoiceBatchRoutes(app: App, deps: AppDeps): void {
  registerBatchRoutes(app, deps, {
    prefix: '/v1',
    preHandler: requireApiKey(deps, 'voice'),
    security: [{ apiKey: [] }],
    tags: ['v1'],
    account: async (req) => (await deps.services.billing.payerFor(principalOf(req))).walletId,
    principal: principalOf,
  });
  // The dashboard's: the session's account; its calls placed as the dashboard's (key id 0, prefix `dashboard`).
  const portal: BatchEdge = {
    prefix: '/portal',
    preHandler: requireSession(deps),
    security: [{ session: [] }],
    tags: ['voice'],
    account: async (req) => (await deps.services.billing.accountOf(sessionOf(req).id)).walletId,
    principal: (req) => ({ ...dashboardPrincipal(sessionOf(req).id), scopes: ['voice'] }),
  };
  registerBatchRoutes(app, deps, portal);
  app.post(
    '/portal/voice/batches/estimate',
    {
      preHandler: portal.preHandler,
      bodyLimit: deps.config.http.inferenceBodyLimitBytes * 16,
      schema: {
        tags: portal.tags,
        summary: "A batch's numbers and the range of its cost, nothing stored",
        security: portal.security,
        body: BatchBodySchema,
        response: {
          200: Type.Object({
            numbers: Type.Integer(),
            valid: Type.Integer(),
            invalid: Type.Integer(),
            attempts_max: Type.Integer(),
            cost_cents: Type.Object({ min: Type.Number(), max: Type.Number(), typical: Type.Number() }),
          }),
          ...errors(400, 401, 403, 404),
        },
      },
    },
    async (req) => deps.services.voiceBatches.estimate(portal.principal(req), req.body),
  );
}
