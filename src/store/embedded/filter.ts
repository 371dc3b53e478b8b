// Reading the shape of MongoDB filter documents, for the planner and for upserts.
// Matching is mingo's job (or fastpath.ts's, for the simple filters it covers); these helpers only
// find which fields a filter pins down.

import { setValue } from 'mingo/util';
import type { Filter } from '../port.ts';

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** `{ $gt: 1, $lt: 5 }` as opposed to an embedded document `{ a: 1 }` compared by equality. */
export function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!isPlainObject(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

export interface FieldCondition {
  /** Present when the filter requires `field == eq` (plain value or `$eq`). */
  eq?: { value: unknown };
  gt?: { value: unknown; inclusive: boolean };
  lt?: { value: unknown; inclusive: boolean };
}

/**
 * The conditions every matching document must meet, per top-level field path: the filter's own
 * fields and those of `$and` clauses (a conjunction, so each clause is necessary). Anything under
 * `$or`, `$nor`, `$not`... is ignored: it never narrows the candidates safely.
 */
export function fieldConditions(filter: Filter): Map<string, FieldCondition> {
  const out = new Map<string, FieldCondition>();
  collect(filter, out);
  return out;
}

function collect(filter: Filter, out: Map<string, FieldCondition>): void {
  for (const [field, cond] of Object.entries(filter)) {
    if (field === '$and' && Array.isArray(cond)) {
      for (const clause of cond) if (isPlainObject(clause)) collect(clause, out);
      continue;
    }
    if (field.startsWith('$')) continue;
    const c = out.get(field) ?? {};
    if (isOperatorObject(cond)) {
      if ('$eq' in cond) c.eq ??= { value: cond.$eq };
      if ('$gte' in cond) c.gt ??= { value: cond.$gte, inclusive: true };
      if ('$gt' in cond) c.gt ??= { value: cond.$gt, inclusive: false };
      if ('$lte' in cond) c.lt ??= { value: cond.$lte, inclusive: true };
      if ('$lt' in cond) c.lt ??= { value: cond.$lt, inclusive: false };
    } else if (!(cond instanceof RegExp)) {
      c.eq ??= { value: cond };
    }
    out.set(field, c);
  }
}

/**
 * The document an upsert starts from when nothing matched, as MongoDB builds it: the filter's
 * equality fields (plain values and `$eq`, also inside `$and`), dotted paths expanded.
 */
export function upsertSeed(filter: Filter): Record<string, unknown> {
  const seed: Record<string, unknown> = {};
  for (const [field, cond] of fieldConditions(filter)) {
    if (cond.eq !== undefined) setValue(seed, field, structuredClone(cond.eq.value));
  }
  return seed;
}
