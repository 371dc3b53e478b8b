// What a call asks to learn of its conversation once it ends (issue 43 §2): the `analysis` of
// POST /v1/voice/call (and so of a batch), or its voice model's default. An llm model, whether to
// summarize, and up to 20 typed fields to extract. The schema checks each part's shape; what it
// cannot say (unique names, an enum's values of the field's type, the whole's size) is
// `analysisProblem`'s, one message naming the field. Read by the route, the model's schema and
// src/voice/analysis.ts.
import { Type, type Static } from 'typebox';

export const ANALYSIS_FIELD_TYPES = ['string', 'number', 'integer', 'boolean'] as const;
export type AnalysisFieldType = (typeof ANALYSIS_FIELD_TYPES)[number];

/** A field's name: the JSON key it comes back under (and a batch's CSV column). */
export const ANALYSIS_FIELD_NAME = '^[a-z][a-z0-9_]{0,39}$';
export const MAX_ANALYSIS_FIELDS = 20;
/** The whole `analysis` as JSON, at most: it is kept in the call's snapshot (twice while it runs). */
export const MAX_ANALYSIS_BYTES = 8 * 1024;

export const AnalysisFieldSchema = Type.Object(
  {
    name: Type.String({ pattern: ANALYSIS_FIELD_NAME }),
    type: Type.Union(ANALYSIS_FIELD_TYPES.map((t) => Type.Literal(t))),
    description: Type.String({ minLength: 1, maxLength: 500 }),
    enum: Type.Optional(
      Type.Array(Type.Union([Type.String({ minLength: 1, maxLength: 100 }), Type.Number()]), { minItems: 1, maxItems: 50, uniqueItems: true }),
    ),
  },
  { additionalProperties: false },
);

export const AnalysisSchema = Type.Object(
  {
    model: Type.String({ minLength: 1, maxLength: 200 }),
    summary: Type.Optional(Type.Boolean()),
    fields: Type.Optional(Type.Array(AnalysisFieldSchema, { maxItems: MAX_ANALYSIS_FIELDS })),
  },
  { additionalProperties: false },
);

export type AnalysisField = {
  name: string;
  type: AnalysisFieldType;
  description: string;
  enum?: (string | number)[];
};
export type AnalysisRequest = Omit<Static<typeof AnalysisSchema>, 'fields'> & { fields?: AnalysisField[] };

/** What is wrong with an `analysis` beyond its schema (a message, and the field it names), or null. */
export function analysisProblem(a: AnalysisRequest): { field: string; message: string } | null {
  const fields = a.fields ?? [];
  const seen = new Set<string>();
  for (const [i, f] of fields.entries()) {
    if (seen.has(f.name)) return { field: `fields.${i}.name`, message: `Two analysis fields are named '${f.name}'; names must be unique.` };
    seen.add(f.name);
    if (f.enum === undefined) continue;
    if (f.type === 'boolean') return { field: `fields.${i}.enum`, message: `The boolean field '${f.name}' takes no enum.` };
    const fits = (v: string | number) => (f.type === 'string' ? typeof v === 'string' : typeof v === 'number' && (f.type === 'number' || Number.isInteger(v)));
    if (!f.enum.every(fits)) return { field: `fields.${i}.enum`, message: `The enum of '${f.name}' must hold values of its type, ${f.type}.` };
  }
  if (a.summary === false && fields.length === 0) return { field: 'fields', message: 'An analysis with summary false needs at least one field.' };
  if (Buffer.byteLength(JSON.stringify(a)) > MAX_ANALYSIS_BYTES) {
    return { field: 'fields', message: `The analysis is longer than ${MAX_ANALYSIS_BYTES} bytes of JSON; shorten its descriptions.` };
  }
  return null;
}
