// Tools in OpenAI's function format, as chat requests (src/http/routes/v1-chat.ts), calls
// (POST /v1/voice/call's `tools`) and voice models (`agent_tools`, PUT /admin/models) declare them.
// Here on the foundation floor because a model's schema (src/shared/model-schema.ts) takes them.
import { Type, type Static } from 'typebox';
import { FreeText } from './strings.ts';

export const FunctionName = Type.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' });

export const ToolSchema = Type.Object(
  {
    type: Type.Literal('function'),
    function: Type.Object(
      {
        name: FunctionName,
        description: Type.Optional(Type.String({ maxLength: 10_000 })),
        parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
        strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const ToolUrl = Type.String({ minLength: 1, maxLength: 2048 });

/** A voice agent's tool: OpenAI's function format and the URL its calls go to (else the declaration's own URL). */
export const AgentToolSchema = Type.Object({ ...ToolSchema.properties, url: Type.Optional(ToolUrl) }, { additionalProperties: false });

/**
 * A voice model's tools (issue 41 §5), the operator's: its LLM agents are offered `tools`, and their
 * calls (and the pack's business actions of calls that name no `tool_url`) go to each tool's `url`,
 * else `url`, signed with the secret in the environment variable `signing_secret_env` (never stored).
 */
export const AgentToolsSchema = Type.Object(
  {
    tools: Type.Optional(Type.Array(AgentToolSchema, { minItems: 1, maxItems: 32 })),
    url: Type.Optional(ToolUrl),
    timeout_ms: Type.Optional(Type.Integer({ minimum: 500, maximum: 15_000 })),
    hold_message: Type.Optional(FreeText(300)),
    signing_secret_env: Type.String({ pattern: '^[A-Z_][A-Z0-9_]{0,127}$' }),
  },
  { additionalProperties: false },
);

export type AgentTools = Static<typeof AgentToolsSchema>;
