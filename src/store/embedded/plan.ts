// The embedded store's query planner: which documents to visit, and in which order.
//
// A plan only narrows the candidates; every candidate is still tested against the whole filter with
// mingo, so a plan may visit too much but never too little. Plans, best first:
// - `ids`: `_id` equality or `$in` (point lookups);
// - `index`: equality on a leading prefix of an index's fields, optionally a range on the next one,
//   or just an index whose order gives the requested sort;
// - `scan`: the whole collection in `_id` order.
// A plan is `ordered` when it yields candidates already in the requested sort order, so a limited
// query can stop early instead of keeping a top-k. A plan is `exact` when the lookup itself decides
// the whole filter (a covered predicate: only plain equalities, every one consumed by the key), so
// the per-document mingo test can be skipped; compiling a mingo Query costs ~25 µs, which would
// otherwise dominate every point read (an API-key check, an actor load).

import { compare } from 'mingo/util';
import type { Filter, Id, Sort } from '../port.ts';
import { fieldConditions, isOperatorObject, type FieldCondition } from './filter.ts';
import { AFTER, scalarPair, type IndexKey, type KeyPart } from './keys.ts';

export interface PlannableIndex {
  readonly name: string;
  readonly fields: readonly string[];
  readonly sparse: boolean;
  readonly unique: boolean;
}

/** LMDB range: `lo` inclusive, `hi` exclusive; undefined means open. */
export interface KeyRange {
  lo?: IndexKey;
  hi?: IndexKey;
}

export type Plan<I extends PlannableIndex = PlannableIndex> =
  | { kind: 'ids'; ids: Id[]; ordered: false; exact?: boolean }
  | { kind: 'index'; index: I; range: KeyRange; reverse: boolean; ordered: boolean; exact?: boolean }
  | { kind: 'scan'; reverse: boolean; ordered: boolean; exact?: false };

export function planQuery<I extends PlannableIndex>(filter: Filter, sort: Sort | undefined, indexes: readonly I[]): Plan<I> {
  const ids = idLookups(filter);
  if (ids) return { kind: 'ids', ids, ordered: false, exact: idsDecideFilter(filter) };
  const conds = fieldConditions(filter);
  const sortEntries = Object.entries(sort ?? {});
  let best: { plan: Plan<I>; score: number } | undefined;
  for (const index of indexes) {
    const candidate = planIndex(index, filter, conds, sortEntries);
    if (candidate && (!best || candidate.score > best.score)) best = candidate;
  }
  if (best) return best.plan;
  const idOrder = orderFrom(sortEntries, [], 0);
  return { kind: 'scan', reverse: idOrder?.reverse ?? false, ordered: idOrder !== undefined };
}

/** `_id: v`, `_id: {$eq: v}` or `_id: {$in: [...]}` with ids only: the documents to fetch by key. */
function idLookups(filter: Filter): Id[] | undefined {
  const eq = fieldConditions(filter).get('_id')?.eq;
  if (eq && isId(eq.value)) return [eq.value];
  const cond = filter._id;
  if (isOperatorObject(cond) && Array.isArray(cond.$in) && cond.$in.every(isId)) {
    // In key order, as MongoDB walks the _id index, so unsorted results come back in _id order.
    return [...new Set(cond.$in as Id[])].sort(compare);
  }
  return undefined;
}

/**
 * True when fetching the looked-up ids is the whole filter: `{_id: v}`, `{_id: {$eq: v}}` or
 * `{_id: {$in: [...]}}` and nothing else. Not `{$and: [{_id: 1}, ...]}` nor `{_id: {$in: [1], $ne: 1}}`,
 * whose other conditions still need mingo.
 */
function idsDecideFilter(filter: Filter): boolean {
  const keys = Object.keys(filter);
  if (keys.length !== 1 || keys[0] !== '_id') return false;
  const cond = filter._id;
  if (!isOperatorObject(cond)) return true;
  const ops = Object.keys(cond);
  return ops.length === 1 && (ops[0] === '$in' || ops[0] === '$eq');
}

function isId(value: unknown): value is Id {
  return (typeof value === 'number' && Number.isFinite(value)) || typeof value === 'string';
}

function planIndex<I extends PlannableIndex>(
  index: I,
  filter: Filter,
  conds: Map<string, FieldCondition>,
  sortEntries: [string, 1 | -1][],
): { plan: Plan<I>; score: number } | undefined {
  const prefix: KeyPart[] = [];
  let eqLen = 0;
  let pinsNonNull = false;
  for (const field of index.fields) {
    const eq = conds.get(field)?.eq;
    const pair = eq && scalarPair(eq.value);
    if (!pair) break;
    prefix.push(...pair);
    if (eq.value !== null && eq.value !== undefined) pinsNonNull = true;
    eqLen++;
  }
  const next = index.fields[eqLen];
  const range = next === undefined ? undefined : rangeOn(prefix, conds.get(next));
  // A sparse index lacks the documents missing its fields, so only use it when the filter requires one.
  if (index.sparse && !pinsNonNull && !range) return undefined;
  const order = sortEntries.length > 0 ? orderFrom(sortEntries, index.fields, eqLen) : undefined;
  if (eqLen === 0 && !range && !order) return undefined;
  const score = eqLen * 4 + (range ? 2 : 0) + (order ? 1 : 0) + (index.unique && eqLen === index.fields.length ? 8 : 0);
  const keyRange = range ?? (prefix.length > 0 ? { lo: prefix, hi: [...prefix, AFTER] } : {});
  return {
    plan: {
      kind: 'index',
      index,
      range: keyRange,
      reverse: order?.reverse ?? false,
      ordered: order !== undefined || sortEntries.length === 0,
      exact: !range && coveredByEqualities(filter, index.fields.slice(0, eqLen)),
    },
    score,
  };
}

/**
 * True when the filter is nothing but plain string equalities on exactly these index fields. Strings
 * only: their key encoding is unambiguous (numbers would also match Dates stored as epoch ms, and
 * null also matches a missing field), so the index range holds exactly the matching documents.
 */
function coveredByEqualities(filter: Filter, fields: readonly string[]): boolean {
  const keys = Object.keys(filter);
  if (fields.length === 0 || keys.length !== fields.length) return false;
  return fields.every((f) => typeof filter[f] === 'string');
}

/**
 * The key range for `$gt/$gte/$lt/$lte` on the field after the equality prefix. MongoDB compares
 * within one type bracket ({$gt: 5} never matches a string), which is exactly one tag here.
 * Bounds are widened to inclusive where LMDB needs it; mingo drops the equal keys afterwards.
 */
function rangeOn(prefix: KeyPart[], cond: FieldCondition | undefined): KeyRange | undefined {
  const gt = cond?.gt && cond.gt.value !== null ? scalarPair(cond.gt.value) : undefined;
  const lt = cond?.lt && cond.lt.value !== null ? scalarPair(cond.lt.value) : undefined;
  const tag = gt?.[0] ?? lt?.[0];
  if (tag === undefined) return undefined;
  const lo = gt && gt[0] === tag ? [...prefix, ...gt] : [...prefix, tag];
  const hi = lt && lt[0] === tag ? (cond?.lt?.inclusive ? [...prefix, ...lt, AFTER] : [...prefix, ...lt]) : [...prefix, tag + 1];
  return { lo, hi };
}

/**
 * Whether walking the index forward or backward yields the requested sort. Fields pinned by the
 * equality prefix are constant and drop out; the remaining sort keys must be the next index fields in
 * one direction (LMDB keys are stored ascending whatever the declared direction), optionally followed
 * by `_id` once every index field is consumed: duplicates of one key are stored in `_id` order.
 * With `fields` empty this answers for the primary database, which is in `_id` order.
 */
function orderFrom(sortEntries: [string, 1 | -1][], fields: readonly string[], eqLen: number): { reverse: boolean } | undefined {
  const pinned = new Set(fields.slice(0, eqLen));
  const rest = sortEntries.filter(([field]) => !pinned.has(field));
  const first = rest[0];
  if (!first) return { reverse: false };
  const dir = first[1];
  for (let i = 0; i < rest.length; i++) {
    const [field, d] = rest[i]!;
    if (d !== dir) return undefined;
    const indexField = fields[eqLen + i];
    const isTrailingId = field === '_id' && i === rest.length - 1 && eqLen + i === fields.length;
    if (field !== indexField && !isTrailingId) return undefined;
  }
  return { reverse: dir === -1 };
}
