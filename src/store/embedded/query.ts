// Reads of the embedded collection (its second layer, over indexes.ts): the plan's candidates
// (plan.ts) tested against the filter, sorted and limited, on LMDB's latest committed snapshot;
// used by the reads and, inside a write's transaction, by the writes that first find their
// documents. Filters are tested with mingo, so their semantics are MongoDB's, except for the
// simple shapes fastpath.ts compiles itself.

import { Query } from 'mingo';
import { Context } from 'mingo/core';
import * as queryOperators from 'mingo/operators/query';
import * as projectionOperators from 'mingo/operators/projection';
import { Query as BareQuery } from 'mingo/query';
import type { Doc, Filter, Id, Sort } from '../port.ts';
import { cloneDoc, sortComparator } from './documents.ts';
import { fastMatcher } from './fastpath.ts';
import { IndexedDocuments, type IndexState } from './indexes.ts';
import { idKey } from './keys.ts';
import { planQuery, type KeyRange, type Plan } from './plan.ts';
import { TopK } from './topk.ts';

export abstract class QueryableDocuments<T extends Doc> extends IndexedDocuments<T> {
  protected select(filter: Filter, sort: Sort | undefined, skip: number, limit: number): T[] {
    const activeSort = sort && Object.keys(sort).length > 0 ? sort : undefined;
    const plan = planQuery(filter, activeSort, this.indexes);
    const matches = this.matches(filter, plan);
    if (!activeSort || plan.ordered) return take(matches, skip, limit);
    const cmp = sortComparator(activeSort);
    if (limit === Infinity) return [...matches].sort(cmp).slice(skip);
    // Unordered source with a limit: keep only the best skip+limit documents while scanning.
    const top = new TopK<T>(skip + limit, cmp);
    for (const doc of matches) top.push(doc);
    return top.sorted().slice(skip);
  }

  protected *matches(filter: Filter, plan: Plan<IndexState>): Generator<T> {
    const test = plan.exact || Object.keys(filter).length === 0 ? () => true : matcher(filter);
    for (const doc of this.candidates(plan)) if (test(doc)) yield doc;
  }

  private *candidates(plan: Plan<IndexState>): Generator<T> {
    switch (plan.kind) {
      case 'ids':
        for (const id of plan.ids) {
          const doc = this.docs.get(idKey(id));
          if (doc) yield doc;
        }
        return;
      case 'index':
        for (const { value: id } of plan.index.db.getRange(rangeOptions(plan.range, plan.reverse))) {
          const doc = this.docs.get(id);
          if (doc) yield doc;
        }
        return;
      case 'scan':
        for (const { value } of this.docs.getRange({ reverse: plan.reverse })) yield value;
        return;
    }
  }

  /**
   * The documents whose acknowledged lazy writes a failed commit left in the overlay (by `_id` key):
   * reads show them in place of LMDB's older versions (overlay.ts); undefined when there are none.
   */
  protected keptDocs(): Map<Id, T> | undefined {
    if (this.ctx.directory.failures.kept === 0) return undefined;
    let kept: Map<Id, T> | undefined;
    for (const [key, p] of this.overlay.pending) if (p.failed) (kept ??= new Map()).set(key, p.doc as T);
    return kept;
  }

  /** The kept documents that match `filter` (copies: the overlay's are never handed out). */
  protected keptMatching(kept: Map<Id, T>, filter: Filter): T[] {
    const test = Object.keys(filter).length === 0 ? () => true : matcher(filter);
    return [...kept.values()].filter((doc) => test(doc)).map((doc) => cloneDoc(doc));
  }

  /** select() with the kept documents in place of LMDB's versions; by `_id` when unsorted. */
  protected selectKept(kept: Map<Id, T>, filter: Filter, sort: Sort | undefined, skip: number, limit: number): T[] {
    const rows = this.select(filter, sort, 0, skip + limit + kept.size).filter((doc) => !kept.has(idKey(doc._id)));
    rows.push(...this.keptMatching(kept, filter));
    rows.sort(sortComparator(sort && Object.keys(sort).length > 0 ? sort : { _id: 1 }));
    return rows.slice(skip, skip + limit);
  }

  protected first(filter: Filter, sort?: Sort): T | undefined {
    return this.select(filter, sort, 0, 1)[0];
  }

  /** The `_id`s of all matches, collected before any write so no cursor walks a database being modified. */
  protected matchingIds(filter: Filter): Id[] {
    const ids: Id[] = [];
    for (const doc of this.matches(filter, planQuery(filter, undefined, this.indexes))) ids.push(doc._id);
    return ids;
  }
}

/**
 * The query operators only: mingo's default Query copies its whole operator table (hundreds of
 * expression operators) into every query it compiles, which cost ~18 µs a filter; with this
 * context a filter compiles in ~6 µs. Filters using `$expr` need the expression operators and get
 * mingo's full Query.
 */
const QUERY_CONTEXT = Context.init({ query: queryOperators, projection: projectionOperators });

/** The `_id` of a filter that is exactly `{ _id: <string or finite number> }`. */
export function pointId(filter: Filter): Id | undefined {
  for (const key in filter) if (key !== '_id') return undefined;
  return scalarId(filter._id);
}

/** `value` when it is a string or a finite number (an `_id` a point lookup can use). */
export function scalarId(value: unknown): Id | undefined {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value)) ? value : undefined;
}

function usesExpressions(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(usesExpressions);
  if (value === null || typeof value !== 'object' || value instanceof Date || value instanceof RegExp) return false;
  for (const [k, v] of Object.entries(value)) if (k === '$expr' || usesExpressions(v)) return true;
  return false;
}

export function matcher(filter: Filter): (doc: Doc) => boolean {
  const fast = fastMatcher(filter);
  if (!fast) return mingoMatcher(filter);
  let slow: ((doc: Doc) => boolean) | undefined;
  return (doc) => fast(doc) ?? (slow ??= mingoMatcher(filter))(doc);
}

function mingoMatcher(filter: Filter): (doc: Doc) => boolean {
  // No `$where`/`$function`: in-process JavaScript from a filter would be code injection here.
  const query = usesExpressions(filter) ? new Query(filter, { scriptEnabled: false }) : new BareQuery(filter, { context: QUERY_CONTEXT, scriptEnabled: false });
  return (doc) => query.test(doc);
}

function take<T>(docs: Iterable<T>, skip: number, limit: number): T[] {
  const out: T[] = [];
  if (limit <= 0) return out;
  let skipped = 0;
  for (const doc of docs) {
    if (skipped < skip) {
      skipped++;
      continue;
    }
    out.push(doc);
    if (out.length >= limit) break;
  }
  return out;
}

/** LMDB range options for `lo` (inclusive) .. `hi` (exclusive), walked either way. */
function rangeOptions(range: KeyRange, reverse: boolean) {
  if (!reverse) return { start: range.lo, end: range.hi };
  return { start: range.hi, end: range.lo, reverse: true, exclusiveStart: true, inclusiveEnd: true };
}
