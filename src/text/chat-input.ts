// What OpenAI's clients send that means nothing more than the spec's request, brought to it before
// the route's schema sees the body (a fastify preValidation step), so that:
//   - a parameter sent as `null` (OpenAI documents most of them nullable: `stop`, `seed`, `n`...)
//     is absent, as OpenAI treats it, and so is `store: false`;
//   - an assistant message kept from one of OpenAI's own answers loses the answer's read-only
//     fields (`refusal`, `annotations`, and any field sent as null but `content`), never forwarded;
//   - `developer` (OpenAI's newer name for a system instruction, sent by the AI SDK and LangChain
//     for reasoning-looking model ids) is `system`;
//   - a role outside OpenAI's set is `invalid_message_role` whatever else the message carries (the
//     spec's code comes before any complaint about the message's other fields);
//   - `functions` and `function_call`, OpenAI's deprecated function calling, are refused naming
//     their successors `tools` and `tool_choice`.
// Nothing else changes: unknown fields are still refused by the schema, naming them.
import { ApiError } from '../errors.ts';

/** The roles a message may carry past this point; `tool` only for a model with tool calling (the gateway checks). */
export const CHAT_ROLES = new Set(['system', 'user', 'assistant', 'tool']);
/** An assistant message's read-only fields (kept from one of OpenAI's answers): dropped whatever their value. */
export const READ_ONLY = ['refusal', 'annotations', 'audio', 'function_call'] as const;
/** The fields whose null is not dropped (the schema then refuses it): of the body, of a message. */
export const CHAT_NULLS_REFUSED = ['model', 'messages'] as const;
export const MESSAGE_NULLS_REFUSED = ['role', 'content'] as const;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

export function roleRefusal(i: number, role: string, why = 'use system, user or assistant'): ApiError {
  return new ApiError('invalid_message_role', `messages[${i}].role '${role}' is not supported; ${why}.`, { param: `messages.${i}.role` });
}

/** Drops the keys of `o` whose value is null, but those in `keep`. */
export function dropNulls(o: Record<string, unknown>, keep: readonly string[] = []): void {
  for (const k of Object.keys(o)) if (o[k] === null && !keep.includes(k)) delete o[k];
}

export function normalizeChatBody(body: unknown): void {
  if (!isRecord(body)) return;
  dropNulls(body, CHAT_NULLS_REFUSED);
  // Nothing is kept here, so `store: false` (the AI SDK's stateless setting) asks for what happens
  // anyway; `store: true` stays refused as an unknown field.
  if (body.store === false) delete body.store;
  // OpenAI's deprecated function calling (openai-edge and openai v3 type only it): named, with its successor.
  for (const k of ['functions', 'function_call']) {
    if (k in body)
      throw new ApiError(
        'invalid_request',
        `${k} is OpenAI's deprecated form of function calling; send tools and tool_choice (on a model with tool calling).`,
        { param: k },
      );
  }
  if (!Array.isArray(body.messages)) return;
  body.messages.forEach((m: unknown, i) => {
    if (!isRecord(m) || typeof m.role !== 'string') return; // the schema reports it
    const role = m.role === 'developer' ? 'system' : m.role;
    if (!CHAT_ROLES.has(role)) throw roleRefusal(i, role.slice(0, 32));
    m.role = role;
    if (role === 'assistant') for (const k of READ_ONLY) delete m[k];
    dropNulls(m, MESSAGE_NULLS_REFUSED);
  });
}
