// What a call does when an answering machine or a call-screening bot answers it (issue 41 §1): the
// `voicemail` of POST /v1/voice/call, or its voice model's default. One closed object rather than a
// union, so a wrong field gets a message naming it (src/voice/voicemail.ts checks the combinations):
// - `hangup`: the agent stops and the call hangs up (end reason `voicemail`);
// - `leave_message`: the agent stops, the greeting's beep (or its end) is waited for, the message
//   (`text`, or the agent's pack's `response_id`) plays, then the call hangs up (`voicemail`);
// - `continue`: who answered is detected and told (`answered_by`, the event), the agent carries on.
import { Type, type Static } from 'typebox';

export const VOICEMAIL_ACTIONS = ['hangup', 'leave_message', 'continue'] as const;

export const VoicemailSchema = Type.Object(
  {
    action: Type.Union(VOICEMAIL_ACTIONS.map((a) => Type.Literal(a))),
    text: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
    response_id: Type.Optional(Type.String({ pattern: '^[A-Z][A-Z0-9_.]{0,127}$' })),
  },
  { additionalProperties: false },
);

export type Voicemail = Static<typeof VoicemailSchema>;

/** What is wrong with a `voicemail`'s fields together (a message naming the field, and the field), or null. */
export function voicemailProblem(v: Voicemail): { field: 'text' | 'response_id'; message: string } | null {
  const both = v.text !== undefined && v.response_id !== undefined;
  if (v.action === 'leave_message' && (both || (v.text === undefined && v.response_id === undefined)))
    return {
      field: v.text === undefined ? 'text' : 'response_id',
      message: "A 'leave_message' voicemail needs its message: either 'text' or 'response_id', not both.",
    };
  if (v.action !== 'leave_message' && (v.text !== undefined || v.response_id !== undefined))
    return {
      field: v.text !== undefined ? 'text' : 'response_id',
      message: `A '${v.action}' voicemail leaves no message: give 'text' or 'response_id' with 'leave_message' only.`,
    };
  return null;
}
