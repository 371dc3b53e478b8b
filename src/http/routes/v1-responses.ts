// POST /v1/responses: OpenAI's Responses API for text and function tools (the AI SDK's default,
// openai-node's `responses.create`), translated onto the metered chat path (src/text/responses.ts).
import { Type, type Static, type TSchema } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { errors, KeyString, OneOf } from '../schemas.ts';
import { documented, nullOnly, nullsDropped, orNull, present, sseData } from '../openapi.ts';
import { KEY_STRING_PATTERN } from '../../shared/strings.ts';
import { relaySse } from '../sse.ts';
import { dropNulls } from '../../text/chat-input.ts';
import { completionResponse, failedResponse, newResponseId, toChatBody, type ResponsesBody } from '../../text/responses.ts';
import { responseEvents } from '../../text/responses-stream.ts';
import { REASONING_EFFORTS } from '../../providers/types.ts';
import { cancelOnDisconnect } from '../disconnect.ts';

const FunctionName = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' });
// An input item's own shape is checked in the translation (message, function_call, function_call_output).
const InputItem = Type.Object({ type: Type.Optional(Type.String({ maxLength: 64 })) }, { additionalProperties: true });

const ResponsesBodySchema = Type.Object(
  {
    model: KeyString(200),
    input: Type.Union([Type.String({ maxLength: 1_000_000 }), Type.Array(InputItem, { minItems: 1, maxItems: 2048 })]),
    instructions: Type.Optional(Type.String({ maxLength: 1_000_000 })),
    max_output_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    stream: Type.Optional(Type.Boolean()),
    store: Type.Optional(Type.Boolean()),
    previous_response_id: Type.Optional(KeyString(256)),
    tools: Type.Optional(
      Type.Array(
        Type.Object(
          {
            type: Type.Literal('function'),
            name: FunctionName,
            description: Type.Optional(Type.Union([Type.String({ maxLength: 10_000 }), Type.Null()])),
            parameters: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
            strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
          },
          { additionalProperties: false },
        ),
        { minItems: 0, maxItems: 128 },
      ),
    ),
    tool_choice: Type.Optional(
      Type.Union([
        Type.Literal('none'),
        Type.Literal('auto'),
        Type.Literal('required'),
        Type.Object({ type: Type.Literal('function'), name: FunctionName }, { additionalProperties: false }),
      ]),
    ),
    parallel_tool_calls: Type.Optional(Type.Boolean()),
    text: Type.Optional(
      Type.Object(
        {
          format: Type.Optional(
            Type.Object(
              {
                type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]),
                name: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' })),
                description: Type.Optional(Type.String({ maxLength: 10_000 })),
                schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
                strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    reasoning: Type.Optional(Type.Object({ effort: Type.Optional(OneOf(REASONING_EFFORTS)) }, { additionalProperties: false })),
    user: Type.Optional(KeyString(256)),
    safety_identifier: Type.Optional(KeyString(64)),
    prompt_cache_key: Type.Optional(KeyString(1024)),
    // OpenAI's limits: 16 pairs, keys of 64 characters, values of 512. Echoed in the answer only.
    metadata: Type.Optional(
      Type.Unsafe<Record<string, string>>({
        type: 'object',
        propertyNames: { maxLength: 64, pattern: KEY_STRING_PATTERN },
        additionalProperties: { type: 'string', maxLength: 512 },
        maxProperties: 16,
      }),
    ),
    // Extra output: only encrypted reasoning, of which there is none (checked in the translation).
    include: Type.Optional(Type.Array(Type.String({ maxLength: 128 }), { maxItems: 16 })),
    truncation: Type.Optional(Type.Union([Type.Literal('disabled'), Type.Literal('auto')])),
  },
  { additionalProperties: false },
);

/** The fields whose null is not dropped (the schema then refuses it): of the body, of a tool. */
const NULLS_REFUSED = ['model', 'input'];
const TOOL_NULLS_REFUSED = ['type', 'name'];

/** Nulls as absent, at the top and in each tool (the AI SDK sends `description: null`, `strict: null`...). */
function normalizeResponsesBody(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const b = body as Record<string, unknown>;
  dropNulls(b, NULLS_REFUSED);
  if (Array.isArray(b.tools)) for (const t of b.tools) if (typeof t === 'object' && t !== null) dropNulls(t as Record<string, unknown>, TOOL_NULLS_REFUSED);
}

// For the document only (src/http/openapi.ts): the body as normalizeResponsesBody lets it in, the
// response object that completionResponse (src/text/responses.ts) answers, and the stream's events
// (src/text/responses-stream.ts). The serialized 200 schema above stays loose on purpose.
const notOffered = 'not offered by the gateway (stateless, text and function tools)';
const DocResponsesBody = nullsDropped(
  {
    ...ResponsesBodySchema,
    properties: {
      ...ResponsesBodySchema.properties,
      tools: { ...ResponsesBodySchema.properties.tools, items: nullsDropped(ResponsesBodySchema.properties.tools.items, TOOL_NULLS_REFUSED) },
    },
  },
  NULLS_REFUSED,
  Object.fromEntries(
    [
      'top_logprobs',
      'prompt_cache_retention',
      'prompt_cache_options',
      'background',
      'max_tool_calls',
      'prompt',
      'service_tier',
      'stream_options',
      'conversation',
      'context_management',
      'moderation',
    ].map((k) => [k, nullOnly(notOffered)]),
  ),
);
/** An array the gateway always sends empty (no annotations, no log probabilities). */
const Empty = Type.Array(Type.Object({}), { maxItems: 0 });
const OutputText = Type.Object({ type: Type.Literal('output_text'), text: Type.String(), annotations: Empty, logprobs: Empty });
/** The request's text format, echoed as sent (one of OpenAI's three shapes; a json_schema one as named, or not). */
const { type: _formatType, ...formatFields } = ResponsesBodySchema.properties.text.properties.format.properties;
const EchoedFormat = Type.Union([
  Type.Object({ type: Type.Literal('text') }),
  Type.Object({ type: Type.Literal('json_object') }),
  Type.Object({ type: Type.Literal('json_schema'), ...formatFields }),
]);
const ItemStatus = Type.Union([Type.Literal('in_progress'), Type.Literal('completed')]);
const MessageItem = Type.Object({
  type: Type.Literal('message'),
  id: Type.String(),
  status: ItemStatus,
  role: Type.Literal('assistant'),
  content: Type.Array(OutputText),
});
const FunctionCallItem = Type.Object({
  type: Type.Literal('function_call'),
  id: Type.String(),
  call_id: Type.String(),
  name: Type.String(),
  arguments: Type.String(),
  status: ItemStatus,
});
const OutputItem = Type.Union([MessageItem, FunctionCallItem]);
const ResponseObjectSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('response'),
  created_at: Type.Integer(),
  status: Type.Union([Type.Literal('in_progress'), Type.Literal('completed'), Type.Literal('incomplete')]),
  error: Type.Null(),
  incomplete_details: Type.Union([Type.Object({ reason: Type.Literal('max_output_tokens') }), Type.Null()]),
  instructions: orNull(Type.String()),
  max_output_tokens: orNull(Type.Integer()),
  model: Type.String(),
  output: Type.Array(OutputItem),
  parallel_tool_calls: Type.Boolean(),
  previous_response_id: Type.Null(),
  store: Type.Literal(false),
  temperature: orNull(Type.Number()),
  top_p: orNull(Type.Number()),
  text: Type.Object({ format: EchoedFormat }),
  tool_choice: present(ResponsesBodySchema.properties.tool_choice),
  tools: Type.Array(
    Type.Object({
      type: Type.Literal('function'),
      name: Type.String(),
      description: orNull(Type.String()),
      parameters: orNull(Type.Record(Type.String(), Type.Unknown())),
      strict: orNull(Type.Boolean()),
    }),
  ),
  truncation: Type.Literal('disabled'),
  usage: Type.Optional(
    Type.Object({
      input_tokens: Type.Integer(),
      input_tokens_details: Type.Object({ cached_tokens: Type.Integer(), cache_write_tokens: Type.Integer() }),
      output_tokens: Type.Integer(),
      output_tokens_details: Type.Object({ reasoning_tokens: Type.Integer() }),
      total_tokens: Type.Integer(),
    }),
  ),
  metadata: Type.Record(Type.String(), Type.String()),
});
/** A stream event: its type, its sequence number, and its fields. */
const event = <T extends string>(type: T, fields: Record<string, TSchema>) =>
  Type.Object({ type: Type.Literal(type), sequence_number: Type.Integer(), ...fields });
const InText = { item_id: Type.String(), output_index: Type.Integer(), content_index: Type.Integer() };
const ResponsesEvent = Type.Union([
  event('response.created', { response: ResponseObjectSchema }),
  event('response.in_progress', { response: ResponseObjectSchema }),
  event('response.output_item.added', { output_index: Type.Integer(), item: OutputItem }),
  event('response.content_part.added', { ...InText, part: OutputText }),
  event('response.output_text.delta', { ...InText, delta: Type.String(), logprobs: Empty }),
  event('response.function_call_arguments.delta', { item_id: Type.String(), output_index: Type.Integer(), delta: Type.String() }),
  event('response.output_text.done', { ...InText, text: Type.String(), logprobs: Empty }),
  event('response.content_part.done', { ...InText, part: OutputText }),
  event('response.function_call_arguments.done', { item_id: Type.String(), name: Type.String(), output_index: Type.Integer(), arguments: Type.String() }),
  event('response.output_item.done', { output_index: Type.Integer(), item: OutputItem }),
  event('response.completed', { response: ResponseObjectSchema }),
  event('response.incomplete', { response: ResponseObjectSchema }),
  event('error', { code: Type.String(), message: Type.String(), param: orNull(Type.String()) }),
]);

export function registerResponsesRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/v1/responses',
    {
      preHandler: requireApiKey(deps, 'chat'),
      preValidation: async (req) => normalizeResponsesBody(req.body),
      bodyLimit: deps.config.http.inferenceBodyLimitBytes,
      ...documented({
        body: { 'application/json': DocResponsesBody },
        responses: {
          200: {
            description: 'The response object; with stream: true, its typed server-sent events (`event: <type>`, `data: <event>`)',
            content: { 'application/json': ResponseObjectSchema, 'text/event-stream': sseData(ResponsesEvent, "Each event's data") },
          },
        },
      }),
      schema: {
        tags: ['v1'],
        summary: "OpenAI's Responses API for text and function tools, served as chat (stateless; stream: true for its typed events)",
        security: [{ apiKey: [] }],
        body: ResponsesBodySchema,
        response: {
          200: Type.Object({ id: Type.String(), object: Type.Literal('response') }, { additionalProperties: true }),
          ...errors(400, 401, 402, 403, 404, 429, 503),
        },
      },
    },
    async (req, reply) => {
      const chat = deps.services.chat;
      // Two fields are cast, the rest of the schema's type is checked against ResponsesBody:
      // - `tools`: the schema admits a tool's `description: null` and `parameters: null` (the AI SDK
      //   sends them), which ResponsesBody does not; normalizeResponsesBody (preValidation, above)
      //   has already dropped them, which the compiler cannot see.
      // - `text.format`: the schema is one object (a type, an optional name), ResponsesBody a union
      //   in which json_schema requires its name. A json_schema format without a name passes the
      //   schema (and reaches the upstream nameless), a name on text or json_object is dropped: a
      //   mismatch the compiler found, kept as it was (no change of behaviour in this refactor).
      const body: ResponsesBody = req.body as Omit<Static<typeof ResponsesBodySchema>, 'tools' | 'text'> & Pick<ResponsesBody, 'tools' | 'text'>;
      const id = newResponseId();
      const prep = await chat.prepare(principalOf(req), toChatBody(body), req.id, 'max_output_tokens');
      const cancel = cancelOnDisconnect(reply);
      if (body.stream !== true) return completionResponse(id, body, await chat.complete(prep, cancel));

      const { chunks } = await chat.openStream(prep, cancel, true);
      let seq = 0;
      await relaySse(req, reply, deps.streams, cancel, responseEvents(id, prep.created, prep.model._id, body, chunks), {
        frame: (ev) => {
          seq = (ev.sequence_number as number) + 1;
          return `event: ${ev.type}\ndata: ${JSON.stringify(ev)}\n\n`;
        },
        // A break mid-stream: the `error` event (the envelope's code and message), then
        // `response.failed`, the response's terminal event, for clients that wait for one.
        error: (api) => {
          const error = { type: 'error', code: api.code, message: api.message, param: api.options.param ?? null, sequence_number: seq };
          const failed = {
            type: 'response.failed',
            sequence_number: seq + 1,
            response: failedResponse(id, prep.created, prep.model._id, body, { code: api.code, message: api.message }),
          };
          return `event: error\ndata: ${JSON.stringify(error)}\n\nevent: response.failed\ndata: ${JSON.stringify(failed)}\n\n`;
        },
      });
    },
  );
}
