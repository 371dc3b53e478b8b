// Outbound AI voice calls (scope `voice`): the routes translate only; the rules are src/voice/service.ts
// (the model's: src/voice/checks.ts).
//   POST /v1/voice/call                 → 202 a call (queued); Idempotency-Key for 24 h
//   GET  /v1/voice/calls[/{id}]         the caller's calls (another account's: 404)
//   POST /v1/voice/calls/{id}/cancel    before the answer (billed 0)
//   POST /v1/voice/calls/{id}/hangup    in progress (end_reason api_hangup)
//   (the same reads and controls under /portal for the dashboard: registerCallRoutes, portal-voice.ts)
//   POST /v1/voice/calls/{id}/callback/{provider}  a carrier's status callback (signed, or with the call's secret)
// The carriers' media streams are the WebSocket edge's (src/ws/voice.ts).
import { Type, type TSchema } from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { Closed, CursorList, errors, FreeText, KeyString, OneOf } from '../schemas.ts';
import { Limit, limitOf } from '../pages.ts';
import multipart from '@fastify/multipart';
import { ApiError, echo } from '../../errors.ts';
import { CALLER_ID_PATTERN } from '../../shared/phones.ts';
import { VoicemailSchema } from '../../shared/voicemail-schema.ts';
import { AnalysisSchema } from '../../shared/analysis-schema.ts';
import { CALL_STATUSES } from '../../../machines/voice-call.machine.ts';
import { AgentToolSchema } from '../../shared/tool-schema.ts';
import { registerRecordingRoutes, type RecordingEdge } from './voice-recording.ts';

const Lang = Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$', maxLength: 35 });
const StringMap = (maxKeys: number, maxChars: number) =>
  Type.Record(Type.String({ pattern: '^[A-Za-z0-9_.-]{1,64}$' }), FreeText(maxChars), { maxProperties: maxKeys });

export const VoiceCallBodySchema = Closed({
  model: KeyString(200),
  to: Type.String({ minLength: 1, maxLength: 32 }),
  /** A caller id a route owns: E.164, or an ExoPhone as Exotel writes it (`0XXXXXXXXXX`). */
  from: Type.Optional(Type.String({ pattern: CALLER_ID_PATTERN })),
  agent: Type.Optional(
    Type.Union([
      Closed({ type: Type.Literal('intent'), intent_model: KeyString(200) }),
      Closed({ type: Type.Literal('llm'), llm_model: KeyString(200), system_prompt: FreeText(8000) }),
      Closed({ type: Type.Literal('hybrid'), intent_model: KeyString(200), llm_model: KeyString(200), system_prompt: FreeText(8000) }),
    ]),
  ),
  language: Type.Optional(Lang),
  voice: Type.Optional(KeyString(128)),
  first_message: Type.Optional(
    Closed({
      response_id: Type.Optional(Type.String({ pattern: '^[A-Z][A-Z0-9_.]{0,127}$' })),
      text: Type.Optional(FreeText(1000)),
      mode: Type.Optional(Type.Union([Type.Literal('agent_first'), Type.Literal('wait_for_callee'), Type.Literal('after_silence')])),
    }),
  ),
  variables: Type.Optional(StringMap(50, 500)),
  max_duration_seconds: Type.Optional(Type.Integer({ minimum: 30, maximum: 3600 })),
  ring_timeout_seconds: Type.Optional(Type.Integer({ minimum: 5, maximum: 120 })),
  idle: Type.Optional(
    Closed({
      prompt_after_ms: Type.Optional(Type.Integer({ minimum: 1000, maximum: 60_000 })),
      max_prompts: Type.Optional(Type.Integer({ minimum: 0, maximum: 10 })),
    }),
  ),
  turn: Type.Optional(
    Closed({
      endpointing_ms: Type.Optional(
        Closed({ min: Type.Optional(Type.Integer({ minimum: 100, maximum: 5000 })), max: Type.Optional(Type.Integer({ minimum: 100, maximum: 10_000 })) }),
      ),
      interruption: Type.Optional(
        Closed({
          enabled: Type.Optional(Type.Boolean()),
          min_speech_ms: Type.Optional(Type.Integer({ minimum: 20, maximum: 5000 })),
          ignore: Type.Optional(Type.Array(FreeText(40), { maxItems: 50 })),
        }),
      ),
    }),
  ),
  webhook_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  metadata: Type.Optional(StringMap(16, 500)),
  /** The LLM's tools (OpenAI's function format), each with the URL its calls go to (else `tool_url`): docs/api/voice.md. */
  tools: Type.Optional(Type.Array(AgentToolSchema, { minItems: 1, maxItems: 32 })),
  /** Where the pack's business actions (and tools without a `url`) are sent, signed with the `webhook_id`'s secret. */
  tool_url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
  tool_timeout_ms: Type.Optional(Type.Integer({ minimum: 500, maximum: 15_000 })),
  /** Said while a request runs (default: the pack's GEN.HOLD, else "One moment please."). */
  tool_hold_message: Type.Optional(FreeText(300)),
  /** Where the pack's escalation to a person transfers the call (checked as `to` is: src/voice/transfer.ts). */
  transfer_to: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
  record: Type.Optional(Type.Boolean()),
  recording_notice: Type.Optional(FreeText(500)),
  voicemail: Type.Optional(VoicemailSchema),
  /** What to learn of the conversation once the call ends (docs/api/voice.md, Analysis). */
  analysis: Type.Optional(AnalysisSchema),
});

const Nullable = (t: TSchema) => Type.Union([t, Type.Null()]);
/** A turn's stages (src/voice/turn-stages.ts), each a `t`. */
const ByStage = <T extends TSchema>(t: T, description: string) =>
  Type.Object({ endpointing_ms: t, queued_ms: t, recognition_ms: t, agent_ms: t, synthesis_ms: t, first_frame_ms: t }, { description });
const Turn = Type.Object({
  role: Type.String(),
  text: Type.String(),
  heard_text: Type.Optional(Type.String()),
  interrupted: Type.Optional(Type.Boolean()),
  start: Type.Number(),
  end: Type.Number(),
  response_id: Type.Optional(Type.String()),
  intent: Type.Optional(Nullable(Type.String())),
  entities: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]))),
  dtmf: Type.Optional(Type.String()),
  latency_ms: Type.Optional(Type.Number({ description: "The end of the callee's speech (or last key) → this reply's first frame to the carrier, ms." })),
  stages: Type.Optional(ByStage(Type.Number(), 'latency_ms by stage, in order; they add up to it (docs/api/voice.md, Where the time goes).')),
  tool: Type.Optional(
    Type.Object(
      {
        id: Type.String(),
        type: Type.String(),
        name: Type.String(),
        arguments: Type.Unknown(),
        status: Type.String(),
        status_code: Nullable(Type.Integer()),
        error: Nullable(Type.String()),
        result: Type.String(),
        latency_ms: Type.Number(),
      },
      { description: "A `tool` turn's request to the integrator and its answer (docs/api/voice.md, The agent acts during the call)." },
    ),
  ),
});
const Value = Nullable(Type.Union([Type.String(), Type.Number(), Type.Boolean()]));
const CallAnalysis = Type.Object(
  {
    status: Type.String({ description: 'pending, completed, failed or skipped (no conversation)' }),
    source: Type.String({ description: 'llm (asked of `model`) or pack (the intent pack decided it, free)' }),
    model: Nullable(Type.String()),
    summary: Nullable(Type.String()),
    fields: Type.Record(Type.String(), Value),
    intent: Nullable(Type.String()),
    actions: Nullable(Type.Array(Type.String())),
    entities: Nullable(Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()]))),
    usage: Nullable(Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer() })),
    cost_cents: Type.Number(),
    attempts: Type.Integer(),
    error: Nullable(Type.Object({ code: Type.String(), message: Type.String() })),
    completed_at: Nullable(Type.Integer()),
  },
  { description: 'What happened on the call, read after it ended (docs/api/voice.md, Analysis); null: none asked and no pack decided it.' },
);
const Quantiles = Type.Object({ p50: Nullable(Type.Number()), p95: Nullable(Type.Number()) });
export const Call = Type.Object({
  id: Type.String(),
  object: Type.Literal('voice.call'),
  status: Type.String(),
  model: Type.String(),
  to: Type.String(),
  from: Nullable(Type.String()),
  direction: Type.Optional(Type.Union([Type.Literal('inbound'), Type.Literal('outbound')])),
  created_at: Type.Integer(),
  max_duration_seconds: Type.Integer(),
  metadata: Type.Record(Type.String(), Type.String()),
  end_reason: Type.Optional(Nullable(Type.String())),
  dial_started_at: Type.Optional(Nullable(Type.Integer())),
  ringing_at: Type.Optional(Nullable(Type.Integer())),
  answered_at: Type.Optional(Nullable(Type.Integer())),
  ended_at: Type.Optional(Nullable(Type.Integer())),
  duration_seconds: Type.Optional(Nullable(Type.Number())),
  billed_seconds: Type.Optional(Nullable(Type.Integer())),
  cost_cents: Type.Optional(Nullable(Type.Number())),
  carrier_duration_seconds: Type.Optional(Nullable(Type.Integer())),
  transferred_to: Type.Optional(Nullable(Type.String({ description: 'The number a `transferred` call was handed to.' }))),
  recording: Type.Optional(
    Nullable(
      Type.Object(
        {
          available: Type.Boolean(),
          status: Type.String({ description: 'recording (the call goes on), ready, none (nothing was recorded), deleted' }),
          duration_seconds: Nullable(Type.Number()),
          url: Nullable(Type.String()),
          expires_at: Nullable(Type.Integer({ description: 'Unix seconds: when its retention deletes it.' })),
        },
        { description: "The call's recording (null: the call was not recorded)." },
      ),
    ),
  ),
  answered_by: Type.Optional(
    Nullable(Type.String({ description: 'Who answered: human, machine or unknown (a call with `voicemail`); null until decided, or when not asked.' })),
  ),
  answered_by_detection: Type.Optional(
    Nullable(Type.Object({ source: Type.String(), detail: Type.String(), decision_ms: Type.Integer() }, { description: 'How answered_by was decided.' })),
  ),
  transcript: Type.Optional(Type.Array(Turn)),
  transcript_truncated: Type.Optional(
    Type.Boolean({ description: "The transcript holds the call's first 200 turns: later ones were left out (metrics.turns_dropped)." }),
  ),
  outcome: Type.Optional(
    Type.Object({
      actions: Type.Array(
        Type.Object({
          action: Type.String(),
          intent: Nullable(Type.String()),
          entities: Type.Record(Type.String(), Type.Union([Type.String(), Type.Number()])),
          at: Type.Number(),
          status: Type.Optional(
            Type.String({
              description: 'How the integrator answered the request: ok, refused, failed, timeout, or interrupted (the gateway restarted with it in flight).',
            }),
          ),
        }),
      ),
      final_state: Nullable(Type.String()),
    }),
  ),
  metrics: Type.Optional(
    Type.Object({
      turn_latency_ms: Quantiles,
      turn_stages_ms: ByStage(Quantiles, "Each stage's p50 and p95 over the transcript's answers."),
      answer_to_first_frame_ms: Nullable(Type.Number()),
      interruptions: Type.Integer(),
      turns: Type.Integer(),
      turns_dropped: Type.Integer(),
    }),
  ),
  analysis: Type.Optional(Nullable(CallAnalysis)),
});
const CallId = Type.Object({ id: KeyString(64) });
const IdempotencyKey = Type.String({ pattern: '^[\\x21-\\x7e]{1,255}$' });

export function registerVoiceRoutes(app: App, deps: AppDeps): void {
  const payer = async (req: Parameters<typeof principalOf>[0]) => (await deps.services.billing.payerFor(principalOf(req))).walletId;

  app.post(
    '/v1/voice/call',
    {
      preHandler: requireApiKey(deps, 'voice'),
      schema: {
        tags: ['v1'],
        summary: 'Place an outbound AI voice call',
        security: [{ apiKey: [] }],
        body: VoiceCallBodySchema,
        headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) }),
        response: { 200: Call, 202: Call, ...errors(400, 401, 402, 403, 404, 409, 429, 503) },
      },
    },
    async (req, reply) => {
      const key = req.headers['idempotency-key'];
      const { created, call } = await deps.services.voice.create(principalOf(req), req.body, typeof key === 'string' ? key : undefined, req.id);
      // The same key and body again: the same call, as it stands now (200), not a new one.
      return reply
        .code(created ? 202 : 200)
        .header('location', `/v1/voice/calls/${call.id}`)
        .send(call);
    },
  );

  const role = async (req: FastifyRequest) => (await deps.services.billing.accountOf(principalOf(req).userId)).role;
  registerCallRoutes(app, deps, { prefix: '/v1', preHandler: requireApiKey(deps, 'voice'), security: [{ apiKey: [] }], tags: ['v1'], account: payer, role });

  // Carriers' status callbacks: no API key (the carrier calls); its signature (Twilio) or the call's
  // secret in the URL (`?token=`, Exotel) decides. Forms (as both post them by default), JSON objects
  // and multipart fields (Exotel's StatusCallbackContentType): the form and multipart parsers are
  // this scope's only, every body at most CALLBACK_BODY_BYTES; read as ordered pairs (`callbackBody`).
  // The scope typed as App: fastify's register types its plugin's instance with the default type
  // provider, not the parent's, so without it the routes' schemas would not type their requests.
  void app.register(async (scope: App) => {
    scope.addContentTypeParser<string>('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
      done(null, new FormPairs([...new URLSearchParams(body)]));
    });
    await scope.register(multipart, { limits: CALLBACK_MULTIPART_LIMITS });
    scope.addHook('onRequest', async (req) => {
      // Multipart is read as a stream (no bodyLimit): a declared length over the limit is refused unread.
      if (Number(req.headers['content-length']) > CALLBACK_BODY_BYTES)
        throw new ApiError('body_too_large', `A status callback is at most ${CALLBACK_BODY_BYTES} bytes.`);
    });
    scope.post(
      '/v1/voice/calls/:id/callback/:provider',
      {
        bodyLimit: CALLBACK_BODY_BYTES,
        schema: {
          tags: ['v1'],
          summary: "A carrier's status callback (authenticated by its signature or the call's secret)",
          params: Type.Object({ id: KeyString(64), provider: KeyString(32) }),
          querystring: Type.Object({ token: Type.Optional(Type.String({ maxLength: 128 })) }, { additionalProperties: false }),
          response: { 200: Type.Object({ received: Type.Boolean() }), ...errors(400, 403, 404, 413, 415) },
        },
      },
      async (req) => {
        const { id, provider } = req.params;
        const { params, encoding } = await callbackBody(req);
        const signature = req.headers['x-twilio-signature'];
        const { token } = req.query;
        return deps.services.voice.carrierCallback(
          id,
          provider,
          { params, encoding, ...(typeof signature === 'string' ? { signature } : {}), ...(token !== undefined ? { token } : {}) },
          req.url,
        );
      },
    );
  });
}

/** A form's fields, in order (what Twilio's signature covers): never what a JSON body parses to. */
class FormPairs {
  constructor(readonly pairs: [string, string][]) {}
}

/** The largest status callback body (a carrier's is well under 2 KiB). */
const CALLBACK_BODY_BYTES = 16_384;
const CALLBACK_MULTIPART_LIMITS = { fields: 64, fieldNameSize: 100, fieldSize: 2048, files: 1, fileSize: 1, parts: 65, headerPairs: 20 };

/**
 * A status callback's body as ordered (name, value) pairs, and how it came: a form (the parser
 * above made it its pairs), a JSON object (its string, number and boolean values; nulls and nested
 * values, such as Exotel's `Legs`, are not read) or multipart fields (no files). Anything else that
 * parsed (a JSON array or scalar), a file, an over-long field or a malformed multipart body: 400.
 */
async function callbackBody(req: FastifyRequest): Promise<{ params: [string, string][]; encoding: 'form' | 'json' | 'multipart' }> {
  const refuse = (why: string) => new ApiError('invalid_request', `The status callback's body ${why}.`);
  if (req.isMultipart()) {
    const params: [string, string][] = [];
    try {
      for await (const part of req.parts()) {
        if (part.type === 'file') {
          part.file.resume();
          throw refuse(`carries a file (in '${echo(part.fieldname)}'): a callback's fields are text`);
        }
        if (part.valueTruncated) throw refuse(`field '${echo(part.fieldname)}' is longer than ${CALLBACK_MULTIPART_LIMITS.fieldSize} bytes`);
        params.push([part.fieldname, String(part.value)]);
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw refuse(`is not multipart form fields we can read (${echo((err as Error).message ?? 'unreadable')})`);
    }
    return { params, encoding: 'multipart' };
  }
  if (req.body instanceof FormPairs) return { params: req.body.pairs, encoding: 'form' };
  if (req.body === undefined) return { params: [], encoding: 'form' }; // none
  if (req.body === null || typeof req.body !== 'object' || Array.isArray(req.body)) throw refuse('is JSON but not an object of fields');
  const params: [string, string][] = [];
  for (const [name, value] of Object.entries(req.body)) {
    if (typeof value === 'string') params.push([name, value]);
    else if ((typeof value === 'number' && Number.isFinite(value)) || typeof value === 'boolean') params.push([name, String(value)]);
  }
  return { params, encoding: 'json' };
}

/** Where calls are read and controlled: /v1 (an API key with scope `voice`: its payer's calls) or /portal (the session: its account's). */
export interface CallsEdge extends RecordingEdge {
  prefix: '/v1' | '/portal';
}

/**
 * GET {prefix}/voice/calls[/{id}], POST {prefix}/voice/calls/{id}/cancel|hangup: the same service
 * calls, schemas and answers on both edges; only who is asking differs.
 */
export function registerCallRoutes(app: App, deps: AppDeps, edge: CallsEdge): void {
  const { prefix, preHandler, security, tags, account } = edge;
  registerRecordingRoutes(app, deps, edge);
  app.get(
    `${prefix}/voice/calls/:id`,
    {
      preHandler,
      schema: { tags, summary: 'A call, its transcript, outcome and cost', security, params: CallId, response: { 200: Call, ...errors(401, 403, 404) } },
    },
    async (req) => deps.services.voice.get(await account(req), req.params.id),
  );

  app.get(
    `${prefix}/voice/calls`,
    {
      preHandler,
      schema: {
        tags,
        summary: "The account's calls, newest first (cursor pagination: after is the previous page's last_id)",
        security,
        querystring: Type.Object(
          {
            limit: Limit,
            after: Type.Optional(KeyString(64)),
            status: Type.Optional(OneOf(CALL_STATUSES)),
            direction: Type.Optional(OneOf(['inbound', 'outbound'] as const)),
            /** Unix seconds: calls changed after it (to reconcile missed webhooks). */
            updated_after: Type.Optional(Type.String({ pattern: '^[0-9]{1,12}$' })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: CursorList(Call, Type.String()),
          ...errors(400, 401, 403),
        },
      },
    },
    async (req) => {
      const q = req.query;
      return deps.services.voice.list(await account(req), {
        limit: limitOf(q),
        ...(q.after ? { after: q.after } : {}),
        ...(q.status ? { status: q.status } : {}),
        ...(q.direction ? { direction: q.direction } : {}),
        ...(q.updated_after ? { updatedAfter: Number(q.updated_after) * 1000 } : {}),
      });
    },
  );

  for (const what of ['cancel', 'hangup'] as const) {
    app.post(
      `${prefix}/voice/calls/:id/${what}`,
      {
        preHandler,
        schema: {
          tags,
          summary: what === 'cancel' ? 'Cancel a call not answered yet (billed 0)' : 'Hang up a call in progress',
          security,
          params: CallId,
          response: { 200: Call, ...errors(401, 403, 404, 409) },
        },
      },
      async (req) => {
        if (req.body !== undefined && req.body !== null && Object.keys(req.body).length > 0) throw new ApiError('invalid_request', `${what} takes no body.`);
        return deps.services.voice.control(await account(req), req.params.id, what);
      },
    );
  }
}
