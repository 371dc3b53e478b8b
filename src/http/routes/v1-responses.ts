// POST /v1/responses: OpenAI's Responses API for text and function tools (the AI SDK's default,
// openai-node's `responses.create`), translated onto the metered chat path (src/text/responses.ts).
import { Type, type Static } from 'typebox';
import type { App, AppDeps } from '../types.ts';
import { principalOf, requireApiKey } from '../auth.ts';
import { errors, KeyString, OneOf } from '../schemas.ts';
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

/** Nulls as absent, at the top and in each tool (the AI SDK sends `description: null`, `strict: null`...). */
function normalizeResponsesBody(body: unknown): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  const b = body as Record<string, unknown>;
  dropNulls(b, ['model', 'input']);
  if (Array.isArray(b.tools)) for (const t of b.tools) if (typeof t === 'object' && t !== null) dropNulls(t as Record<string, unknown>);
}

export function registerResponsesRoutes(app: App, deps: AppDeps): void {
  app.post(
    '/v1/responses',
    {
      preHandler: requireApiKey(deps, 'chat'),
      preValidation: async (req) => normalizeResponsesBody(req.body),
      bodyLimit: deps.config.http.inferenceBodyLimitBytes,
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
      const cancel = cancelOnDisconnect(reply.raw);
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
