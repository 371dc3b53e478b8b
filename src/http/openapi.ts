// What GET /openapi.json says beyond what a route's own schema can. A route's schema validates its
// input (ajv) and serializes its declared JSON answer (fast-json-stringify, the hot path's speed):
// it must not change for the document's sake. Some things the document must say are not validated
// or serialized by fastify at all: a multipart body (read by src/http/uploads.ts), audio and
// server-sent events (written by the route itself), nulls that a preValidation step drops before
// the schema sees the body (src/text/chat-input.ts), and a JSON answer whose serialized schema is
// deliberately loose. Those are declared beside the route as `documented({...})`, which @fastify/swagger
// applies to that route's entry in the document only (its per-route `swaggerTransform`): the route's
// validation and serialization never see them. test/conformance/openapi-document.test.ts holds the
// document to OpenAI's and to the gateway's real answers.
import type { FastifySchema } from 'fastify';
import { Type, type TSchema } from 'typebox';
import { errors } from './schemas.ts';

type Json = Record<string, unknown>;

/** A documented answer: what it is, and its schema by content type. */
export interface DocumentedAnswer {
  description: string;
  content: Record<string, TSchema | Json>;
}

export interface Documented {
  /** The request body as the document shows it, by content type (replaces the route's `body` there only). */
  body?: Record<string, TSchema | Json>;
  /** Answers as the document shows them, by status (each replaces the route's own for that status there only). */
  responses?: Record<number, DocumentedAnswer>;
}

const media = (content: Record<string, TSchema | Json>) => Object.fromEntries(Object.entries(content).map(([type, schema]) => [type, { schema }]));

/**
 * Route options (spread into the route's options) that make the document show `doc` for this route.
 * The transform runs when the document is generated (the first GET /openapi.json), never per request.
 */
export function documented(doc: Documented): { config: { swaggerTransform: SwaggerTransform } } {
  return {
    config: {
      swaggerTransform: ({ schema, url }) => {
        const out: Json = { ...(schema as Json) };
        if (doc.body) out.body = { content: media(doc.body) };
        if (doc.responses) {
          const answers: Json = { ...((schema as Json).response as Json | undefined) };
          for (const [status, a] of Object.entries(doc.responses)) answers[status] = { description: a.description, content: media(a.content) };
          out.response = answers;
        }
        return { schema: out as FastifySchema, url };
      },
    },
  };
}

/** @fastify/swagger's per-route transform, as this module uses it. */
type SwaggerTransform = (input: { schema: FastifySchema; url: string }) => { schema: FastifySchema; url: string };

/** A plain JSON schema as TypeBox's (to sit among TypeBox properties). */
const plain = (schema: Json): TSchema => Type.Unsafe<unknown>(schema);

/** An optional property's schema as one that is always there (TypeBox marks optional on the schema itself). */
export const present = (schema: TSchema): TSchema => plain({ ...schema });

/** `schema` or null. */
export const orNull = (schema: TSchema | Json): TSchema => plain({ anyOf: [schema, { type: 'null' }] });

/**
 * An object schema as a step that drops null-valued fields before validation (`dropNulls`) makes it:
 * each property but those in `keep` also takes null (sent as null, it is treated as absent).
 * `extra` adds documented properties the schema does not have (each as given).
 */
export function nullsDropped(schema: TSchema | Json, keep: readonly string[], extra: Record<string, TSchema | Json> = {}): TSchema {
  const s = schema as Json & { properties: Record<string, Json> };
  const properties = Object.fromEntries(Object.entries(s.properties).map(([k, v]) => [k, keep.includes(k) ? v : orNull(v)]));
  return plain({ ...s, properties: { ...properties, ...extra } });
}

/** A field OpenAI's request has that the gateway takes only as null (treated as absent). */
export const nullOnly = (why: string): TSchema => plain({ type: 'null', description: `Accepted only as null (absent): ${why}` });

/** A binary body (audio). */
export const Binary = { type: 'string', format: 'binary' } as const;

/** One server-sent event's `data`, documented as the JSON it carries (as OpenAI's document does). */
export const sseData = (schema: TSchema | Json, description: string): TSchema => plain({ ...(schema as Json), description });

/** The transcript as text (response_format text, srt or vtt). */
export const PlainText = Type.String({ description: 'The transcript as plain text, SubRip (srt) or WebVTT (vtt), by response_format' });

/**
 * The error answers `errors(...)` declares, as documented answers (for a route whose errors are
 * documented only): the envelope, the 429's other bodies, and an upload's 413 page (src/http/uploads.ts).
 */
export function errorAnswers(...codes: number[]): Record<number, DocumentedAnswer> {
  const envelopes = errors(...codes.filter((c) => c !== 413));
  const out: Record<number, DocumentedAnswer> = {};
  for (const [code, schema] of Object.entries(envelopes))
    out[Number(code)] = { description: 'An error, in the envelope', content: { 'application/json': schema } };
  if (codes.includes(413)) {
    out[413] = { description: 'An upload over 25 MB: a plain page, before the body is read', content: { 'text/html': Type.String() } };
  }
  return out;
}
