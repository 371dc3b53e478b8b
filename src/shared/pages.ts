// Newest-first pages over a collection whose `_id`s grow with time (integer counters, time-sorted
// strings): `after` is the last `_id` of the previous page, so a deep page is one index range, never
// a skip. Every list the dashboard can grow on pages this way (GET /portal/usage/records's shape).
// `newestFirst` reads a store collection (the port's types, src/store/port.ts); the rest is pure.
import type { Collection, Doc, Filter, Id } from '../store/port.ts';

export interface Page<V> {
  data: V[];
  has_more: boolean;
  /** Pass as `after` for the next page; null on the last one. */
  next_after: string | null;
}

export interface PageQuery<I extends Id = Id> {
  limit: number;
  after?: I;
}

export const DEFAULT_PAGE_LIMIT = 20;

/** One page of `filter`'s documents, newest (largest `_id`) first; `filter` must not name `_id`. */
export async function newestFirst<T extends Doc, V>(c: Collection<T>, filter: Filter, q: PageQuery, view: (doc: T) => V): Promise<Page<V>> {
  const f = q.after === undefined ? filter : { ...filter, _id: { $lt: q.after } };
  const rows = await c.find(f, { sort: { _id: -1 }, limit: q.limit + 1 });
  return pageOf(rows, q.limit, view);
}

/** `rows` holds up to limit + 1 documents, newest first: the page, and whether more follow. */
export function pageOf<T extends Doc, V>(rows: T[], limit: number, view: (doc: T) => V): Page<V> {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return { data: page.map(view), has_more: hasMore, next_after: hasMore ? String(page.at(-1)!._id) : null };
}
