// A server-paginated list whose cursor lives in the URL (`?after=`, or another name when a page
// shows two lists), so a page of a list can be linked and reloaded. A server page may come back
// short with more to follow (a key search walks the list in budgeted chunks, so one request never
// holds the gateway long): the page then follows next_after (or last_id) until it is full or the list ends.
import type { Page as ListPage, Query } from './api.ts';
import { useSession } from './context.tsx';
import { Pager, useLoad, type Loaded } from './components.tsx';
import { useRoute } from './router.tsx';

export const PAGE_SIZE = 20;

/** Where the next page starts: `next_after` in the portal's lists, `last_id` in the /v1 lists it answers as they are (calls); null at the end. */
const nextCursor = (page: ListPage<unknown>): string | number | null => (page.has_more === true ? (page.next_after ?? page.last_id ?? null) : null);

export function usePaged<T>(path: string, query: Query = {}, cursorParam = 'after'): { list: Loaded<ListPage<T>>; pager: preact.JSX.Element | null } {
  const { api } = useSession();
  const route = useRoute();
  const after = route.query.get(cursorParam) ?? '';
  const key = JSON.stringify(query);
  const list = useLoad(async () => {
    const rows: T[] = [];
    let cursor: string | number | null = after || null;
    let more = true;
    while (rows.length < PAGE_SIZE && more) {
      const page = await api.get<ListPage<T>>(path, { limit: PAGE_SIZE - rows.length, ...query, after: cursor });
      rows.push(...page.data);
      cursor = nextCursor(page);
      more = cursor !== null;
    }
    return { data: rows, has_more: more, next_after: cursor };
  }, [path, key, after]);
  const pager = list.data ? (
    <Pager
      hasMore={list.data.has_more === true}
      atFirst={!after}
      onFirst={() => route.setQuery({ [cursorParam]: null })}
      onNext={() => route.setQuery({ [cursorParam]: String(list.data!.next_after ?? '') })}
    />
  ) : null;
  return { list, pager };
}
