// What a call's analysis asks the llm and how its answer is read (issue 43 §2), pure: the
// transcript as a conversation to read (agent, callee and tool turns), the JSON schema the answer
// must follow (strict: every key present, null allowed), and the answer checked against the fields
// the call asked for. A value that is not of its field's type (or not among its enum) is null,
// never coerced or guessed; an answer that is not JSON at all leaves everything null. Also the
// fields a pack's call decides without an llm (intent, actions, entities), read from its outcome.
import type { AnalysisValue, OutcomeAction, Turn } from '../../machines/voice-call.machine.ts';
import type { AnalysisField, AnalysisRequest } from '../shared/analysis-schema.ts';
import type { ChatMessage, ResponseFormat } from '../providers/types.ts';

/** The longest summary kept, and the longest string field (the call's snapshot keeps them). */
export const MAX_SUMMARY_CHARS = 2000;
export const MAX_STRING_FIELD_CHARS = 500;

const SYSTEM = [
  'You read the transcript of a phone call between an AI agent (Agent) and the person it called (Callee), and report what happened.',
  'Answer with one JSON object and nothing else.',
  'Use only what the transcript says: when it does not settle a field, that field is null. Never guess or invent a value.',
].join(' ');

/** A turn as a line of the transcript the llm reads: `[12.4s] Callee: …`. */
function line(t: Turn): string {
  const at = `[${t.start.toFixed(1)}s]`;
  if (t.role === 'tool') return `${at} Tool request ${t.tool?.name ?? t.text}: ${t.tool?.status ?? ''}`.trimEnd();
  const who = t.role === 'agent' ? 'Agent' : 'Callee';
  // What the callee heard of a reply cut short is what was said to them.
  const text = t.role === 'agent' && t.interrupted && t.heard_text !== undefined ? `${t.heard_text} [interrupted]` : t.text;
  return `${at} ${who}: ${t.dtmf !== undefined ? `(keys) ${t.dtmf}` : text}`;
}

function describe(req: AnalysisRequest): string {
  const wanted: string[] = [];
  if (req.summary !== false) wanted.push('- summary (string): what happened on the call, in two to four sentences.');
  else wanted.push('- summary: null.');
  for (const f of req.fields ?? []) {
    const choices = f.enum ? `; one of ${f.enum.map((v) => JSON.stringify(v)).join(', ')}` : '';
    wanted.push(`- fields.${f.name} (${f.type}${choices}, or null): ${f.description}`);
  }
  return wanted.join('\n');
}

/** The conversation sent upstream: the instructions, then the transcript. */
export function analysisMessages(req: AnalysisRequest, turns: readonly Turn[]): ChatMessage[] {
  return [
    { role: 'system', content: `${SYSTEM}\nThe object's keys:\n${describe(req)}` },
    { role: 'user', content: `The transcript:\n${turns.map(line).join('\n')}` },
  ];
}

function fieldSchema(f: AnalysisField): Record<string, unknown> {
  const schema: Record<string, unknown> = { type: [f.type, 'null'], description: f.description };
  if (f.enum) schema.enum = [...f.enum, null];
  return schema;
}

/** OpenAI's `response_format` for the answer: strict JSON schema, every key required, each nullable. */
export function analysisFormat(req: AnalysisRequest): ResponseFormat {
  const fields = req.fields ?? [];
  const schema = {
    type: 'object',
    properties: {
      summary: { type: ['string', 'null'] },
      fields: {
        type: 'object',
        properties: Object.fromEntries(fields.map((f) => [f.name, fieldSchema(f)])),
        required: fields.map((f) => f.name),
        additionalProperties: false,
      },
    },
    required: ['summary', 'fields'],
    additionalProperties: false,
  };
  return { type: 'json_schema', json_schema: { name: 'call_analysis', schema, strict: true } };
}

/** The answer's JSON object: the whole text, else its outermost `{…}` (a model that fenced it); null when there is none. */
function parseObject(text: string): Record<string, unknown> | null {
  const attempt = (s: string): Record<string, unknown> | null => {
    try {
      const v: unknown = JSON.parse(s);
      return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
    } catch {
      return null;
    }
  };
  const whole = attempt(text.trim());
  if (whole) return whole;
  const [from, to] = [text.indexOf('{'), text.lastIndexOf('}')];
  return from >= 0 && to > from ? attempt(text.slice(from, to + 1)) : null;
}

/** `v` as field `f` takes it, or null: of its type exactly (an integer a whole number), among its enum, a string within its length. */
export function fieldValue(f: AnalysisField, v: unknown): AnalysisValue {
  const typed =
    (f.type === 'string' && typeof v === 'string' && v.length <= MAX_STRING_FIELD_CHARS) ||
    (f.type === 'boolean' && typeof v === 'boolean') ||
    (f.type === 'number' && typeof v === 'number' && Number.isFinite(v)) ||
    (f.type === 'integer' && typeof v === 'number' && Number.isSafeInteger(v));
  if (!typed) return null;
  if (f.enum && !f.enum.includes(v as string | number)) return null;
  return v as AnalysisValue;
}

/** The llm's answer read against the request: the summary (when asked) and every field, each valid or null. */
export function readAnswer(req: AnalysisRequest, text: string): { summary: string | null; fields: Record<string, AnalysisValue> } {
  const answer = parseObject(text);
  // A model without structured output may put the fields at the top level: taken the same way.
  const given = answer && typeof answer.fields === 'object' && answer.fields !== null ? (answer.fields as Record<string, unknown>) : (answer ?? {});
  const summary = req.summary !== false && typeof answer?.summary === 'string' ? answer.summary.slice(0, MAX_SUMMARY_CHARS) : null;
  const fields = Object.fromEntries((req.fields ?? []).map((f) => [f.name, Object.hasOwn(given, f.name) ? fieldValue(f, given[f.name]) : null]));
  return { summary: summary === '' ? null : summary, fields };
}

/** What a pack's call decided, without an llm: its main intent, the actions taken, the entities heard. */
export interface PackFields {
  intent: string | null;
  actions: string[];
  entities: Record<string, string | number>;
}

/**
 * The main intent is the last action's (the business the call did), else the last intent the pack
 * recognised in what the callee said (kept on the agent turn that answered it: src/voice/speaking.ts);
 * the entities are merged in order (the turns', then the actions'), a later value winning.
 */
export function packFields(turns: readonly Turn[], actions: readonly OutcomeAction[]): PackFields {
  const lastAction = actions.findLast((a) => a.intent);
  const lastHeard = turns.findLast((t) => typeof t.intent === 'string' && t.intent !== '');
  const entities: Record<string, string | number> = {};
  for (const e of [...turns.map((t) => t.entities), ...actions.map((a) => a.entities)]) Object.assign(entities, e ?? {});
  return { intent: lastAction?.intent ?? lastHeard?.intent ?? null, actions: actions.map((a) => a.action), entities };
}
