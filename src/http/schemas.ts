// Schemas shared by routes. Route schemas are the single source of validation, types and the
// OpenAPI document. Bodies are closed (additionalProperties: false): unknown fields are refused.
import { Type, type TSchema } from 'typebox';

export { FreeText, KeyString } from '../shared/strings.ts';

export const ErrorEnvelope = Type.Object({
  error: Type.Object({
    message: Type.String(),
    type: Type.String(),
    code: Type.String(),
    // Always sent, null when no field is at fault (OpenAI's Error requires it; the spec's `param?`).
    param: Type.Union([Type.String(), Type.Null()]),
    request_id: Type.Optional(Type.String()),
  }),
});

/** Path ids are strings of digits (no coercion is configured), turned into numbers by the route. */
export const NumericId = Type.String({ pattern: '^[0-9]{1,15}$' });

export const Closed = <T extends Record<string, TSchema>>(props: T) => Type.Object(props, { additionalProperties: false });

/**
 * A choice of constants from a list (a union of literals, the JSON schema `anyOf` of `const`s), typed
 * as the list's element type. TypeBox types a Union of a mapped array (not a written-out tuple) as
 * `never`, so a route's `Static` type would let any value past the compiler's check against the
 * domain's type; Unsafe only names the static type (its marker key is not enumerable: the JSON
 * schema, the validation and the OpenAPI document are the Union's).
 */
export const OneOf = <T extends string | number>(values: readonly T[]) => Type.Unsafe<T>(Type.Union(values.map((v) => Type.Literal(v))));

/** The spec's per-key RPM/TPD 429 body (ApiError with `bare`). */
export const BareDetail = Type.Object({ detail: Type.String() });
/** The same for OpenAI's SDKs: `detail` with the envelope beside it (see toEnvelope). */
const DetailWithEnvelope = Type.Object({ detail: Type.String(), error: ErrorEnvelope.properties.error });

/**
 * Standard error responses documented on every route. A 429 may also be the bare `{detail}` body,
 * and must be declared so: the response serializer would otherwise fail on it (a 500).
 */
export const errors = (...codes: number[]) =>
  Object.fromEntries(codes.map((c) => [c, c === 429 ? Type.Union([DetailWithEnvelope, ErrorEnvelope, BareDetail]) : ErrorEnvelope]));

export const IsoDate = Type.String({ description: 'ISO 8601 UTC' });
export const NullableIso = Type.Union([IsoDate, Type.Null()]);
/** OpenAI's cursor page: `{object: "list", data, has_more, first_id, last_id}` (ids as `id`, null on an empty page). */
export const CursorList = <T extends TSchema, I extends TSchema>(item: T, id: I) =>
  Type.Object({
    object: Type.Literal('list'),
    data: Type.Array(item),
    has_more: Type.Boolean(),
    first_id: Type.Union([id, Type.Null()]),
    last_id: Type.Union([id, Type.Null()]),
  });

/** A per-key limit as set: a positive integer, or null to remove it. */
const Limit = Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000_000_000 }), Type.Null()]);
/** The per-key limits a patch may set (identity/keys.ts LIMITS), by the owner or an administrator. */
export const LimitsPatch = { rpm: Type.Optional(Limit), tpd: Type.Optional(Limit), cpd: Type.Optional(Limit), cpm: Type.Optional(Limit) };
