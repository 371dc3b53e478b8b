// POST /v1/chat/completions: OpenAI-compatible, JSON or server-sent events. The route translates
// only; the metered path is src/text/chat.ts.
import { Type } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { toEnvelope } from '../errors.ts';
import { relaySse } from '../sse.ts';
import { ErrorEnvelope, errors, KeyString, OneOf } from '../schemas.ts';
import { documented, nullOnly, nullsDropped, orNull, sseData } from '../openapi.ts';
import { CHAT_NULLS_REFUSED, MESSAGE_NULLS_REFUSED, normalizeChatBody } from '../../text/chat-input.ts';
import { REASONING_EFFORTS } from '../../providers/types.ts';
import { cancelOnDisconnect } from '../disconnect.ts';
import { FunctionName, ToolSchema } from '../../shared/tool-schema.ts';

// Content is text: a string, or OpenAI's array of text parts (as Cline and other agents send it),
// joined in order. A part's shape is checked in the gateway, so an image, audio or file part is
// refused as such ("only text parts") rather than as a text part missing its text.
const Part = Type.Object({ type: Type.String({ maxLength: 64 }) }, { additionalProperties: true });
// Tool calling (models with `tools: true`; the gateway refuses it for others, naming the field).
const ToolCall = Type.Object(
  {
    id: KeyString(256),
    type: Type.Literal('function'),
    function: Type.Object({ name: FunctionName, arguments: Type.String({ maxLength: 1_000_000 }) }, { additionalProperties: false }),
  },
  { additionalProperties: false },
);
const Message = Type.Object(
  {
    role: Type.String({ maxLength: 32 }),
    // Null (or absent) only on an assistant message with tool_calls (checked in the gateway).
    content: Type.Optional(Type.Union([Type.String({ maxLength: 1_000_000 }), Type.Array(Part, { minItems: 1, maxItems: 1024 }), Type.Null()])),
    name: Type.Optional(KeyString(64)),
    tool_calls: Type.Optional(Type.Array(ToolCall, { maxItems: 128 })),
    tool_call_id: Type.Optional(KeyString(256)),
  },
  { additionalProperties: false },
);
export const ToolChoiceSchema = Type.Union([
  Type.Literal('none'),
  Type.Literal('auto'),
  Type.Literal('required'),
  Type.Object(
    { type: Type.Literal('function'), function: Type.Object({ name: FunctionName }, { additionalProperties: false }) },
    { additionalProperties: false },
  ),
]);

// OpenAI's three shapes as one object, so every mistake is reported against the field it is in;
// `json_schema` comes with type json_schema and only with it (checked in the gateway). A JSON
// schema's own content is the upstream's to judge (the body's size and depth limits bound it).
const ResponseFormatSchema = Type.Object(
  {
    type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]),
    json_schema: Type.Optional(
      Type.Object(
        {
          name: Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }),
          description: Type.Optional(Type.String({ maxLength: 10_000 })),
          schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const ChatBodySchema = Type.Object(
  {
    model: KeyString(200),
    messages: Type.Array(Message, { maxItems: 2048 }),
    stream: Type.Optional(Type.Boolean()),
    stream_options: Type.Optional(Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: false })),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    max_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000_000 })),
    stop: Type.Optional(Type.Union([Type.String({ maxLength: 512 }), Type.Array(Type.String({ maxLength: 512 }), { minItems: 1, maxItems: 4 })])),
    n: Type.Optional(Type.Integer({ minimum: 1, maximum: 16 })),
    presence_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
    frequency_penalty: Type.Optional(Type.Number({ minimum: -2, maximum: 2 })),
    seed: Type.Optional(Type.Integer({ minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER })),
    response_format: Type.Optional(ResponseFormatSchema),
    logprobs: Type.Optional(Type.Boolean()),
    top_logprobs: Type.Optional(Type.Integer({ minimum: 0, maximum: 20 })),
    reasoning_effort: Type.Optional(OneOf(REASONING_EFFORTS)),
    verbosity: Type.Optional(Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')])),
    // Token ids of the upstream model's tokenizer, which only the client knows: passed through.
    logit_bias: Type.Optional(
      Type.Unsafe<Record<string, number>>({
        type: 'object',
        propertyNames: { pattern: '^[0-9]{1,10}$' },
        additionalProperties: { type: 'integer', minimum: -100, maximum: 100 },
        maxProperties: 1024,
      }),
    ),
    safety_identifier: Type.Optional(KeyString(64)),
    user: Type.Optional(KeyString(256)),
    prompt_cache_key: Type.Optional(KeyString(1024)),
    tools: Type.Optional(Type.Array(ToolSchema, { minItems: 1, maxItems: 128 })),
    tool_choice: Type.Optional(ToolChoiceSchema),
    parallel_tool_calls: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);

/** One output token's log probability, with its likeliest alternatives. */
const TokenLogprobFields = { token: Type.String(), logprob: Type.Number(), bytes: Type.Union([Type.Array(Type.Integer()), Type.Null()]) };
const TokenLogprobSchema = Type.Object({ ...TokenLogprobFields, top_logprobs: Type.Array(Type.Object(TokenLogprobFields)) });

const ChatCompletionSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      message: Type.Object({
        role: Type.String(),
        content: Type.Union([Type.String(), Type.Null()]),
        refusal: Type.Null(),
        tool_calls: Type.Optional(Type.Array(ToolCall)),
      }),
      logprobs: Type.Union([Type.Object({ content: Type.Union([Type.Array(TokenLogprobSchema), Type.Null()]), refusal: Type.Null() }), Type.Null()]),
      finish_reason: Type.String(),
    }),
  ),
  usage: Type.Object({
    prompt_tokens: Type.Integer(),
    completion_tokens: Type.Integer(),
    total_tokens: Type.Integer(),
    prompt_tokens_details: Type.Optional(Type.Object({ cached_tokens: Type.Integer() })),
    completion_tokens_details: Type.Optional(Type.Object({ reasoning_tokens: Type.Integer() })),
  }),
});

// For the document only (src/http/openapi.ts): the body as normalizeChatBody lets it in (nulls as
// absent; OpenAI's fields the gateway takes only as null; an answer's read-only fields on an
// assistant message), and the stream's chunks.
const DocMessage = nullsDropped(Message, MESSAGE_NULLS_REFUSED, {
  refusal: { ...orNull(Type.String()), description: "An answer's read-only field, kept in a history: ignored on an assistant message" },
  annotations: { type: 'array', description: "An answer's read-only field, kept in a history: ignored on an assistant message" },
  audio: { ...orNull({ type: 'object' }), description: "An answer's read-only field, kept in a history: ignored on an assistant message" },
  function_call: { ...orNull({ type: 'object' }), description: "An answer's read-only field, kept in a history: ignored on an assistant message" },
});
const notOffered = 'not offered by the gateway';
const DocChatBody = nullsDropped(
  { ...ChatBodySchema, properties: { ...ChatBodySchema.properties, messages: { ...ChatBodySchema.properties.messages, items: DocMessage } } },
  CHAT_NULLS_REFUSED,
  {
    store: { enum: [false, null], description: 'Nothing is stored: false (or null) is accepted, true refused' },
    metadata: nullOnly(notOffered),
    service_tier: nullOnly(notOffered),
    modalities: nullOnly('text is the only output'),
    audio: nullOnly('text is the only output'),
    prediction: nullOnly(notOffered),
    web_search_options: nullOnly(notOffered),
    moderation: nullOnly(notOffered),
    prompt_cache_retention: nullOnly(notOffered),
    prompt_cache_options: nullOnly(notOffered),
    functions: nullOnly("OpenAI's deprecated function calling: send tools"),
    function_call: nullOnly("OpenAI's deprecated function calling: send tool_choice"),
  },
);
// The answer as the document shows it: the serialized schema above, but that its message's role is always assistant.
const Choice = ChatCompletionSchema.properties.choices.items;
const DocCompletion = Type.Object({
  ...ChatCompletionSchema.properties,
  choices: Type.Array(
    Type.Object({ ...Choice.properties, message: Type.Object({ ...Choice.properties.message.properties, role: Type.Literal('assistant') }) }),
  ),
});
const ToolCallDelta = Type.Object({
  index: Type.Integer(),
  id: Type.Optional(Type.String()),
  type: Type.Optional(Type.Literal('function')),
  function: Type.Object({ name: Type.Optional(Type.String()), arguments: Type.Optional(Type.String()) }),
});
const ChatChunkSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion.chunk'),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      delta: Type.Object({
        role: Type.Optional(Type.Literal('assistant')),
        content: Type.Optional(Type.String()),
        tool_calls: Type.Optional(Type.Array(ToolCallDelta)),
      }),
      logprobs: Type.Optional(ChatCompletionSchema.properties.choices.items.properties.logprobs),
      finish_reason: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
  usage: Type.Optional(ChatCompletionSchema.properties.usage),
});

export function registerChatRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/v1/chat/completions',
    {
      preHandler: requireApiKey(deps, 'chat'),
      // Before the schema: nulls as absent, `developer` as system, the role's code before any other.
      preValidation: async (req) => normalizeChatBody(req.body),
      bodyLimit: deps.config.http.inferenceBodyLimitBytes,
      ...documented({
        body: { 'application/json': DocChatBody },
        responses: {
          200: {
            description: 'The completion; with stream: true, server-sent events (`data: <chunk>`, ended by `data: [DONE]`, or by an error event and no [DONE])',
            content: {
              'application/json': DocCompletion,
              'text/event-stream': sseData(Type.Union([ChatChunkSchema, ErrorEnvelope]), "Each event's data: a chunk, or the error that ends the stream"),
            },
          },
        },
      }),
      schema: {
        tags: ['v1'],
        summary: 'Chat completion (OpenAI-compatible; stream: true for server-sent events)',
        security: [{ apiKey: [] }],
        body: ChatBodySchema,
        // A declared 200 schema also makes serialization fast (fast-json-stringify).
        response: { 200: ChatCompletionSchema, ...errors(400, 401, 402, 403, 404, 429, 503) },
      },
    },
    async (req, reply) => {
      const chat = deps.services.chat;
      const body = req.body;
      // Prepared before anything is written: every refusal is an ordinary JSON error.
      const prep = await chat.prepare(principalOf(req), body, req.id);
      const cancel = cancelOnDisconnect(reply);
      if (body.stream !== true) return chat.complete(prep, cancel);

      const { chunks } = await chat.openStream(prep, cancel, body.stream_options?.include_usage === true);
      // Mid-stream failure: the stream ends with an error event (OpenAI's shape) and no [DONE].
      await relaySse(req, reply, deps.streams, cancel, chunks, {
        frame: (chunk) => `data: ${JSON.stringify(chunk)}\n\n`,
        done: 'data: [DONE]\n\n',
        error: (api) => `data: ${JSON.stringify(toEnvelope(api, req.id))}\n\n`,
      });
    },
  );
}
