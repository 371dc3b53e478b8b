// Document-level operations of the embedded store, delegated to mingo so their semantics are
// MongoDB's: update operators, projection and sort order. Only what mingo lacks is written here:
// `$setOnInsert` (mingo has no upsert) and the driver's argument checks.

import { find, update } from 'mingo';
import type { Modifier } from 'mingo/updater';
import { compare, resolve } from 'mingo/util';
import type { Doc, Filter, Projection, Sort, Update } from '../port.ts';
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

/** Applies an update to a matched document in place; true when something changed. */
export function applyUpdate(doc: Doc, spec: Update): boolean {
  const { $setOnInsert: _onInsertOnly, ...operators } = spec;
  if (Object.keys(operators).length === 0) return false;
  return update(doc, operators as Modifier<Doc>).length > 0;
}

/**
 * The document an upsert inserts: the filter's equality fields, then the update's operators, then
 * `$setOnInsert` as a `$set` (MongoDB applies it only when inserting). `_id` leads, as in MongoDB.
 */
export function buildUpsert(filter: Filter, spec: Update): Record<string, unknown> {
  const doc = upsertSeed(filter);
  const { $setOnInsert: onInsert, ...operators } = spec;
  if (Object.keys(operators).length > 0) update(doc, operators as Modifier<Record<string, unknown>>);
  if (onInsert !== undefined) update(doc, { $set: onInsert } as Modifier<Record<string, unknown>>);
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
  return find(docs, {}, projection, { scriptEnabled: false }).all() as T[];
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
