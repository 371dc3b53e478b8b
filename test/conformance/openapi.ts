// The official OpenAI OpenAPI document (the vendored part: test/fixtures/openai-openapi/) as
// validators, with ajv's JSON Schema 2020-12 (the dialect of OpenAPI 3.1): an operation's answer by
// its path, status and content type, as the document declares it; a stream event or a realtime
// event by its `type`, picked from the document's union of them.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';

type Schema = Record<string, any>;

export const DOCUMENT: Schema = byType(
  openapi30Nullable(JSON.parse(readFileSync(new URL('../fixtures/openai-openapi/openapi.json', import.meta.url), 'utf8'))),
);
const ID = 'openai-openapi.json';

/**
 * The document's unions of objects told apart by a `type` of one value each (events, output items,
 * session kinds, audio formats) as what they mean: the member whose `type` the value has must
 * hold, and the `type` must be one of theirs. Validated as written (anyOf/oneOf), a value that
 * breaks its member gets every other member's complaints too ("type must be 'realtime'"), and a
 * member that a value of another type also satisfies would break oneOf; read this way, the errors
 * are its own member's. The same values pass and fail.
 */
function byType(doc: Schema): Schema {
  const resolve = (s: Schema): Schema | undefined =>
    typeof s?.$ref === 'string' && s.$ref.startsWith('#/')
      ? s.$ref
          .slice(2)
          .split('/')
          .reduce((o: any, k: string) => o?.[k], doc)
      : s;
  // A member's `type` value: its own, or that of a part it is made of (allOf).
  const typeOf = (member: Schema): unknown => {
    const s = resolve(member);
    const t = s?.properties?.type;
    if (t?.const !== undefined) return t.const;
    if (Array.isArray(t?.enum) && t.enum.length === 1) return t.enum[0];
    for (const part of s?.allOf ?? []) {
      const inner = typeOf(part);
      if (inner !== undefined) return inner;
    }
    return undefined;
  };
  const walk = (v: any): any => {
    if (Array.isArray(v)) return v.map(walk);
    if (v === null || typeof v !== 'object') return v;
    const out: Schema = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    for (const key of ['oneOf', 'anyOf'] as const) {
      const members = out[key];
      if (!Array.isArray(members) || members.length < 2) continue;
      const types = members.map(typeOf);
      if (types.some((t) => typeof t !== 'string') || new Set(types).size !== types.length) continue;
      delete out[key];
      out.allOf = [
        ...(out.allOf ?? []),
        { type: 'object', required: ['type'], properties: { type: { enum: types } } },
        // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keywords, not a thenable
        ...members.map((m, i) => ({ if: { type: 'object', required: ['type'], properties: { type: { const: types[i] } } }, then: m })),
      ];
    }
    return out;
  };
  return walk(doc);
}

/**
 * The document is OpenAPI 3.1 (JSON Schema 2020-12), but five schemas of its chat stream still say
 * OpenAPI 3.0's `nullable: true`, which 2020-12 does not know: read as 3.0 meant it, null allowed
 * (`type: [t, 'null']`, null among an `enum`, or `anyOf` with null beside a `$ref`).
 */
function openapi30Nullable(v: any): any {
  if (Array.isArray(v)) return v.map(openapi30Nullable);
  if (v === null || typeof v !== 'object') return v;
  const out: Schema = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, openapi30Nullable(x)]));
  if (out.nullable !== true) return out;
  delete out.nullable;
  if (typeof out.type === 'string') {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
    return out;
  }
  return { anyOf: [out, { type: 'null' }] };
}

// Not strict: the document carries OpenAPI's own keywords (discriminator, x-stainless-*) and formats
// ajv does not know (unixtime, binary); they constrain nothing a client reads.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(DOCUMENT, ID);

const compiled = new Map<string, ValidateFunction>();
function validatorFor(pointer: string): ValidateFunction {
  let v = compiled.get(pointer);
  if (!v) {
    v = ajv.compile({ $ref: `${ID}#${pointer}` });
    compiled.set(pointer, v);
  }
  return v;
}

const escapePointer = (s: string): string => s.replaceAll('~', '~0').replaceAll('/', '~1');

/** A problem with a value: where (a JSON pointer into it) and what the document says. */
export interface Problem {
  at: string;
  message: string;
}

/** The problems of `value` against the schema at `pointer` (`/components/schemas/Model`); none when it conforms. */
export function check(pointer: string, value: unknown): Problem[] {
  const v = validatorFor(pointer);
  if (v(value)) return [];
  return summarize(v.errors ?? []);
}

/**
 * The errors as a reader wants them: where (a JSON pointer into the value), what, and the schema
 * path that says so; once each.
 */
function summarize(errors: ErrorObject[]): Problem[] {
  const out = new Map<string, Problem>();
  for (const e of errors) {
    if (e.keyword === 'if') continue; // "must match then": its own errors are listed
    const extra = e.keyword === 'enum' ? ` ${JSON.stringify((e.params as { allowedValues: unknown }).allowedValues)}` : '';
    const problem = { at: e.instancePath || '/', message: `${e.message}${extra} (${e.schemaPath})` };
    out.set(`${problem.at} ${problem.message}`, problem);
  }
  return [...out.values()];
}

/** The schema pointer of an operation's answer: `/paths/~1models/get/responses/200/content/application~1json/schema`. */
export function answerSchema(path: string, method: string, status: number, contentType: string): string {
  const op = DOCUMENT.paths[path]?.[method];
  if (!op) throw new Error(`${method} ${path} is not in the document`);
  let response = op.responses[String(status)];
  if (!response) throw new Error(`${method} ${path} answers no ${status} in the document`);
  if (response.$ref) response = DOCUMENT.components.responses[response.$ref.split('/').pop()];
  if (!response.content?.[contentType]) throw new Error(`${method} ${path} ${status} has no ${contentType} in the document`);
  const via = op.responses[String(status)].$ref
    ? `/components/responses/${escapePointer(op.responses[String(status)].$ref.split('/').pop())}`
    : `/paths/${escapePointer(path)}/${method}/responses/${status}`;
  return `${via}/content/${escapePointer(contentType)}/schema`;
}

/** The document's schema at a pointer (its `$ref` followed once). */
export function schemaAt(pointer: string): Schema {
  let s: any = DOCUMENT;
  for (const part of pointer.split('/').slice(1)) s = s[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  if (s?.$ref) return schemaAt(s.$ref.slice(1));
  return s;
}

/**
 * A union of events (anyOf/oneOf of `$ref`s, each with a one-value `type` enum) as a map from the
 * event type to its schema's pointer. `fallbacks`: component name patterns searched, in order, for
 * a type the union lacks (the realtime beta events the GA union does not list).
 */
export function eventSchemas(unionPointer: string, fallbacks: RegExp[] = []): (type: string) => string | undefined {
  const byType = new Map<string, string>();
  const typeOf = (pointer: string): string | undefined => {
    const s = schemaAt(pointer);
    const e = s?.properties?.type?.enum ?? (s?.properties?.type?.const !== undefined ? [s.properties.type.const] : undefined);
    return Array.isArray(e) && e.length === 1 ? e[0] : undefined;
  };
  // The union as byType() rewrote it: its members are the `then` of each `if`.
  const union = schemaAt(unionPointer);
  for (const member of union.allOf ?? []) {
    if (!member.then?.$ref) continue;
    const pointer = member.then.$ref.slice(1);
    const t = typeOf(pointer);
    if (t && !byType.has(t)) byType.set(t, pointer);
  }
  if (byType.size === 0) throw new Error(`${unionPointer} is not a union of typed events`);
  const names = Object.keys(DOCUMENT.components.schemas);
  const others = fallbacks.flatMap((re) => names.filter((n) => re.test(n)));
  return (type) => {
    if (byType.has(type)) return byType.get(type);
    for (const name of others) {
      const pointer = `/components/schemas/${escapePointer(name)}`;
      if (typeOf(pointer) === type) return pointer;
    }
    return undefined;
  };
}
