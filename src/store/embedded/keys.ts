// Index keys for the embedded store.
//
// An index entry is an LMDB key made of one (type tag, value) pair per indexed field, mapped to the
// document's `_id` in a dupSort database. LMDB orders array keys element by element (ordered-binary),
// so the tags reproduce MongoDB's cross-type order (null < numbers < strings < booleans < dates) and
// keep a Date apart from a number with the same epoch ms, while each value orders naturally inside
// its type. A null and a missing field share the null tag, as in a MongoDB index.

import { resolve } from 'mingo/util';
import { InvalidKeyError, type Doc, type Id } from '../port.ts';
import { checkKey, isKeyString } from '../key-strings.ts';

export const TAG = { null: 10, number: 20, string: 30, boolean: 80, date: 90 } as const;
/** Greater than any tag, so `[...prefix, AFTER]` is an exclusive upper bound of every key starting with `prefix`. */
export const AFTER = 99;

export type KeyPart = number | string | boolean;
export type IndexKey = KeyPart[];
/** A (tag, value) pair for one field. */
export type Pair = [number, KeyPart];

/** The pair for a scalar, or undefined when the value cannot sit in an index (arrays, objects, NaN...). */
export function scalarPair(value: unknown): Pair | undefined {
  if (value === null || value === undefined) return [TAG.null, 0];
  switch (typeof value) {
    case 'number':
      // -0 and 0 are one value for MongoDB; NaN has no place in a total order.
      return Number.isNaN(value) ? undefined : [TAG.number, value === 0 ? 0 : value];
    case 'string':
      // ordered-binary separates array elements with NUL bytes, so a NUL inside a string could forge
      // a key; an unpaired surrogate is not kept by the document (src/store/key-strings.ts), which
      // would then disagree with its index entry.
      return isKeyString(value) ? [TAG.string, value] : undefined;
    case 'boolean':
      return [TAG.boolean, value];
    default:
      if (value instanceof Date && !Number.isNaN(value.getTime())) return [TAG.date, value.getTime()];
      return undefined;
  }
}

export interface KeyedIndex {
  readonly name: string;
  readonly fields: readonly string[];
  readonly sparse: boolean;
}

/**
 * The index key of a document, or null when a sparse index leaves it out (MongoDB: a sparse index
 * skips a document only when it lacks every indexed field; an explicit null is indexed).
 * Throws when an indexed field holds a value this store cannot index, so the write is refused
 * instead of the index silently disagreeing with the data.
 */
export function documentKey(index: KeyedIndex, doc: Doc, collection: string): IndexKey | null {
  const key: IndexKey = [];
  let present = false;
  for (const field of index.fields) {
    const value: unknown = resolve(doc, field);
    if (value !== undefined) present = true;
    const pair = scalarPair(value);
    if (pair === undefined) {
      if (typeof value === 'string') throw new InvalidKeyError(collection, `field '${field}' of index '${index.name}'`);
      throw unindexable(collection, index.name, field, value);
    }
    key.push(...pair);
  }
  return index.sparse && !present ? null : key;
}

function unindexable(collection: string, index: string, field: string, value: unknown): Error {
  const what = Array.isArray(value)
    ? 'an array (multikey indexes are not supported by the embedded store)'
    : typeof value === 'number'
      ? 'NaN'
      : value instanceof Date
        ? 'an invalid Date'
        : `a value of type ${typeof value} (indexed fields hold strings, numbers, booleans, Dates or null)`;
  return new Error(`${collection}: field '${field}' of index '${index}' holds ${what}`);
}

export function sameKey(a: IndexKey | null, b: IndexKey | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((part, i) => part === b[i]);
}

/** `_id`s are the primary keys; refuse what ordered-binary cannot round-trip faithfully. */
export function assertId(id: unknown, collection: string): asserts id is Id {
  if (typeof id === 'string') return checkKey(id, collection, '_id');
  if (typeof id !== 'number' || !Number.isFinite(id)) {
    throw new Error(`${collection}: _id must be a finite number or a string of well-formed UTF-16 without NUL characters`);
  }
}

/** The primary key for an `_id`: -0 and 0 are one `_id`, as in MongoDB. */
export function idKey(id: Id): Id {
  return id === 0 ? 0 : id;
}
