// Document-level operations of the embedded store, delegated to mingo so their semantics are
// MongoDB's: update operators, projection and sort order. Only what mingo lacks is written here:
// `$setOnInsert` (mingo has no upsert) and the driver's argument checks.
//
// Updates call mingo's update operators (`mingo/operators/update`) directly, each with the operator
// context mingo builds once at import, instead of mingo's `update()`, which rebuilds that context
// (every query and expression operator table) on each call: ~110 µs against ~8 µs per update, on
// the path of every conditional write. The one check `update()` made across operators, that two
// operators do not touch the same path, is kept here.

import { find } from 'mingo';
import * as updateOperators from 'mingo/operators/update';
import { compare, resolve } from 'mingo/util';
import type { Doc, Filter, Projection, Sort, Update } from '../port.ts';
import { fastUpdate } from './fastpath.ts';
import { upsertSeed } from './filter.ts';

/** As the driver: an update document is a non-empty set of `$` operators. */
export function assertUpdate(update: Update): void {
  const keys = Object.keys(update);
  if (keys.length === 0 || !keys.every((k) => k.startsWith('$'))) {
    throw new Error('Update document requires atomic operators');
  }
}

/** As the driver: a replacement document holds no `$` operators. */
export function assertReplacement(doc: object): void {
  if (Object.keys(doc).some((k) => k.startsWith('$'))) {
    throw new Error('Replacement document must not contain atomic operators');
  }
}

type UpdateOperator = (expr: Record<string, unknown>) => (doc: Record<string, unknown>) => string[];
// The one cast left in the embedded store: mingo types its update operators one by one (`$unset`
// takes `Record<string, "">`), and the namespace of its CommonJS build also carries a `default`,
// while we look an operator up by the name the caller wrote and hand it the caller's operand,
// whatever its shape. No narrower type says that, so the table is typed as it is used.
const OPERATORS = updateOperators as unknown as Record<string, UpdateOperator | undefined>;

/** Applies update operators to `doc` in place (mingo's, in the order given); true when something changed. */
function runOperators(doc: Record<string, unknown>, operators: Update): boolean {
  const ops = Object.keys(operators);
  const mutators = ops.map((op) => {
    const fn = Object.hasOwn(OPERATORS, op) ? OPERATORS[op] : undefined;
    if (!fn) throw new Error(`Unknown update operator: '${op}'.`);
    return fn(operators[op] as Record<string, unknown>);
  });
  if (ops.length > 1) assertNoConflicts(operators);
  let changed = false;
  for (const mutate of mutators) if (mutate(doc).length > 0) changed = true;
  return changed;
}

/** As MongoDB (and mingo's `update()`): no two operators may update one path or a path and its parent. */
function assertNoConflicts(operators: Update): void {
  const paths: string[] = [];
  for (const [op, expr] of Object.entries(operators)) {
    const fields = Object.keys(expr as object);
    paths.push(...fields.map((f) => f.split('.$')[0]!));
    if (op === '$rename') paths.push(...Object.values(expr as Record<string, string>));
  }
  const sorted = [...paths].sort();
  for (let i = 1; i < sorted.length; i++) {
    const [a, b] = [sorted[i - 1]!, sorted[i]!];
    if (a === b || b.startsWith(`${a}.`)) throw new Error(`updating the path '${b}' would create a conflict at '${a}'`);
  }
}

/** Applies an update to a matched document in place; true when something changed. */
export function applyUpdate(doc: Doc, spec: Update): boolean {
  const { $setOnInsert: _onInsertOnly, ...operators } = spec;
  if (Object.keys(operators).length === 0) return false;
  return fastUpdate(doc, operators) ?? runOperators(doc, operators);
}

/**
 * The document an upsert inserts: the filter's equality fields, then the update's operators, then
 * `$setOnInsert` as a `$set` (MongoDB applies it only when inserting). `_id` leads, as in MongoDB.
 */
export function buildUpsert(filter: Filter, spec: Update): Record<string, unknown> {
  const doc = upsertSeed(filter);
  const { $setOnInsert: onInsert, ...operators } = spec;
  if (Object.keys(operators).length > 0) runOperators(doc, operators);
  if (onInsert !== undefined) runOperators(doc, { $set: onInsert });
  return idFirst(doc);
}

/** A replacement keeps the matched `_id` (placed first, as MongoDB stores it). */
export function replacement(doc: Record<string, unknown>, id: unknown): Record<string, unknown> {
  return idFirst({ ...doc, _id: id });
}

function idFirst(doc: Record<string, unknown>): Record<string, unknown> {
  if (!('_id' in doc)) return doc;
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}

export function project<T extends Doc>(docs: T[], projection: Projection | undefined): T[] {
  if (!projection || Object.keys(projection).length === 0) return docs;
  const excluded = exclusionOnly(projection);
  if (excluded) return docs.map((doc) => omit(doc, excluded));
  return find(docs, {}, projection, { scriptEnabled: false }).all() as T[];
}

/** The fields of a projection that only excludes top-level fields (`{holds: 0, ...}`), else undefined (mingo's). */
function exclusionOnly(projection: Projection): Set<string> | undefined {
  const fields = new Set<string>();
  for (const [field, v] of Object.entries(projection)) {
    if (v !== 0 || field.length === 0 || field.startsWith('$') || field.includes('.')) return undefined;
    fields.add(field);
  }
  return fields;
}

/** A shallow copy of `doc` without `fields` (its values shared: callers clone if they keep it). */
function omit<T extends Doc>(doc: T, fields: Set<string>): T {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(doc)) if (!fields.has(k)) out[k] = doc[k];
  return out as T;
}

/**
 * MongoDB's sort order (mingo's comparator), a missing field sorting as null like in an index.
 * Ties break on `_id` in the direction of the last sort key, which is the order an index walk
 * yields, so a query answers the same whichever plan ran it.
 */
export function sortComparator(sort: Sort): (a: Doc, b: Doc) => number {
  const entries = Object.entries(sort);
  const tieDir = entries.at(-1)?.[1] ?? 1;
  return (a, b) => {
    for (const [field, dir] of entries) {
      const c = compare(resolve(a, field) ?? null, resolve(b, field) ?? null);
      if (c !== 0) return c * dir;
    }
    return compare(a._id, b._id) * tieDir;
  };
}

/**
 * A deep copy of a stored document: plain objects, arrays and Dates copied here (a wallet with 50
 * holds in ~1 µs), anything else (binary data) by structuredClone.
 */
export function cloneDoc<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    // A list of strings or numbers (a wallet's holds and usage outbox) is copied in one go.
    for (const el of value) if (el !== null && typeof el === 'object') return value.map(cloneDoc) as T;
    return value.slice() as T;
  }
  if (value instanceof Date) return new Date(value.getTime()) as T;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return structuredClone(value);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(value)) out[k] = cloneDoc((value as Record<string, unknown>)[k]);
  return out as T;
}
