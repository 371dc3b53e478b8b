// Fast paths for the filters and updates the gateway's hot writes use, so they skip mingo.
//
// mingo stays the reference for MongoDB's semantics: these paths cover only shapes whose semantics
// are simple and spelled out below, and hand everything else (and any document they are not sure
// about) back to mingo. `test/store/fastpath.test.ts` checks them against mingo on random documents,
// filters and updates. Measured on a wallet's hold and settle (a conditional `$inc` + `$push`, then
// a `$pull` guarded by array membership): mingo compiled and ran them at ~60 µs of CPU a pair,
// most of the write path's cost.
//
// Covered filters: top-level fields (no dots, no `$and`/`$or`...), each either
// - a string, finite number or boolean: equal, or an array field holding an equal element;
// - an object of `$eq`/`$ne` (same operands) and `$gt`/`$gte`/`$lt`/`$lte` with finite numbers:
//   only numbers compare (MongoDB's type bracketing), an array field matching when one element does.
// Covered updates: `$set` (string, finite number, boolean or null), `$inc` (finite number onto a
// number or a missing field), `$unset`, `$push` of one scalar onto an array or a missing field, and
// `$pull` of one scalar, or `{$in: [scalars]}`, from an array of scalars; top-level fields other
// than `_id`, each named once.

import type { Doc, Filter, Update } from '../port.ts';
import { isPlainObject } from './filter.ts';

type Scalar = string | number | boolean;
/** A compiled test: true or false when sure, undefined to let mingo decide for this document. */
export type FastTest = (doc: Doc) => boolean | undefined;

const RANGE = new Set(['$gt', '$gte', '$lt', '$lte']);

function isScalar(v: unknown): v is Scalar {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}

function isPlainField(field: string): boolean {
  return field.length > 0 && !field.startsWith('$') && !field.includes('.');
}

/** MongoDB equality of a stored value with a scalar: the value itself, or one element of an array. */
function equals(value: unknown, want: Scalar): boolean | undefined {
  if (value === want) return true;
  if (Array.isArray(value)) {
    for (const el of value) {
      if (el === want) return true;
      if (typeof el === 'bigint') return undefined;
    }
    return false;
  }
  return typeof value === 'bigint' ? undefined : false;
}

function inRange(n: number, op: string, bound: number): boolean {
  switch (op) {
    case '$gt':
      return n > bound;
    case '$gte':
      return n >= bound;
    case '$lt':
      return n < bound;
    default:
      return n <= bound;
  }
}

/** Every range condition on one element: numbers only, as MongoDB brackets comparisons by type. */
function rangeHolds(value: unknown, ranges: [string, number][]): boolean | undefined {
  if (typeof value === 'bigint') return undefined;
  if (typeof value !== 'number') return false;
  if (Number.isNaN(value)) return undefined;
  return ranges.every(([op, bound]) => inRange(value, op, bound));
}

type FieldTest = (value: unknown) => boolean | undefined;

function fieldTest(cond: unknown): FieldTest | undefined {
  if (isScalar(cond)) return (value) => equals(value, cond);
  if (!isPlainObject(cond)) return undefined;
  const ops = Object.entries(cond);
  if (ops.length === 0) return undefined;
  const eqs: Scalar[] = [];
  const nes: Scalar[] = [];
  const ranges: [string, number][] = [];
  for (const [op, operand] of ops) {
    if ((op === '$eq' || op === '$ne') && isScalar(operand)) (op === '$eq' ? eqs : nes).push(operand);
    else if (RANGE.has(op) && typeof operand === 'number' && Number.isFinite(operand)) ranges.push([op, operand]);
    else return undefined;
  }
  return (value) => {
    for (const want of eqs) {
      const r = equals(value, want);
      if (r !== true) return r;
    }
    for (const avoid of nes) {
      const r = equals(value, avoid);
      if (r !== false) return r === undefined ? undefined : false;
    }
    if (ranges.length === 0) return true;
    // An array matches a range when one element meets all its bounds... in MongoDB each bound may be
    // met by a different element; that subtlety is left to mingo.
    if (Array.isArray(value)) return undefined;
    return rangeHolds(value, ranges);
  };
}

/** A compiled test for a covered filter, or undefined when mingo must compile it. */
export function fastMatcher(filter: Filter): FastTest | undefined {
  const tests: [string, FieldTest][] = [];
  for (const [field, cond] of Object.entries(filter)) {
    if (!isPlainField(field)) return undefined;
    const test = fieldTest(cond);
    if (!test) return undefined;
    tests.push([field, test]);
  }
  return (doc) => {
    let unsure = false;
    for (const [field, test] of tests) {
      const r = test(Object.hasOwn(doc, field) ? doc[field] : undefined);
      if (r === false) return false;
      if (r === undefined) unsure = true;
    }
    return unsure ? undefined : true;
  };
}

const UPDATE_OPS = new Set(['$set', '$inc', '$unset', '$push', '$pull']);

/** `{$in: [scalars]}` (a `$pull` of any of several values). */
function scalarsIn(operand: unknown): boolean {
  if (!isPlainObject(operand)) return false;
  const keys = Object.keys(operand);
  return keys.length === 1 && keys[0] === '$in' && Array.isArray(operand.$in) && operand.$in.every(isScalar);
}

/**
 * Applies a covered update to `doc` in place and says whether it changed it; undefined (with `doc`
 * untouched) when the update or this document is not covered, for mingo to apply instead.
 */
export function fastUpdate(doc: Doc, update: Update): boolean | undefined {
  const seen = new Set<string>();
  const steps: [string, string, unknown][] = [];
  for (const [op, expr] of Object.entries(update)) {
    if (!UPDATE_OPS.has(op) || !isPlainObject(expr)) return undefined;
    for (const [field, operand] of Object.entries(expr)) {
      if (!isPlainField(field) || field === '_id' || seen.has(field)) return undefined;
      seen.add(field);
      const current = Object.hasOwn(doc, field) ? doc[field] : undefined;
      switch (op) {
        case '$set':
          if (!isScalar(operand) && operand !== null) return undefined;
          break;
        case '$inc':
          if (typeof operand !== 'number' || !Number.isFinite(operand)) return undefined;
          if (current !== undefined && (typeof current !== 'number' || !Number.isFinite(current))) return undefined;
          break;
        case '$unset':
          break;
        case '$push':
        case '$pull':
          if (!isScalar(operand) && !(op === '$pull' && scalarsIn(operand))) return undefined;
          if (current !== undefined && !Array.isArray(current)) return undefined;
          // An element that is an array or a document may match a scalar in MongoDB's $pull.
          if (op === '$pull' && Array.isArray(current) && !current.every((el) => el === null || isScalar(el))) return undefined;
          break;
      }
      steps.push([op, field, operand]);
    }
  }
  let changed = false;
  for (const [op, field, operand] of steps) {
    const present = Object.hasOwn(doc, field);
    const current = present ? doc[field] : undefined;
    switch (op) {
      case '$set':
        if (!present || current !== operand) {
          doc[field] = operand;
          changed = true;
        }
        break;
      case '$inc':
        if (!present) {
          doc[field] = operand;
          changed = true;
        } else if (operand !== 0) {
          doc[field] = (current as number) + (operand as number);
          changed = true;
        }
        break;
      case '$unset':
        if (present) {
          delete doc[field];
          changed = true;
        }
        break;
      case '$push':
        if (present) (current as unknown[]).push(operand);
        else doc[field] = [operand];
        changed = true;
        break;
      case '$pull':
        if (present) {
          const out = isScalar(operand) ? [operand] : (operand as { $in: Scalar[] }).$in;
          const drop = out.length > 8 ? new Set<unknown>(out) : undefined;
          const kept = (current as unknown[]).filter((el) => (drop ? !drop.has(el) : !out.includes(el as Scalar)));
          if (kept.length !== (current as unknown[]).length) {
            doc[field] = kept;
            changed = true;
          }
        }
        break;
    }
  }
  return changed;
}
