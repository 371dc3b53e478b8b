// A server-paginated list whose cursor lives in the URL (`?after=`, or another name when a page
// shows two lists), so a page of a list can be linked and reloaded. A server page may come back
// short with more to follow (a key search walks the list in budgeted chunks, so one request never
// holds the gateway long): the page then follows next_after until it is full or the list ends.
import type { Page as ListPage, Query } from './api.ts';
import { useSession } from './context.tsx';
import { Pager, useLoad, type Loaded } from './components.tsx';
import { useRoute } from './router.tsx';

export const PAGE_SIZE = 20;

export function usePaged<T>(path: string, query: Query = {}, cursorParam = 'after'): { list: Loaded<ListPage<T>>; pager: preact.JSX.Element | null } {
  const { api } = useSession();
  const route = useRoute();
  const after = route.query.get(cursorParam) ?? '';
  const key = JSON.stringify(query);
  const list = useLoad(async () => {
    const rows: T[] = [];
    let page: ListPage<T> = { data: [], has_more: true, next_after: after || null };
    while (rows.length < PAGE_SIZE && page.has_more) {
      page = await api.get<ListPage<T>>(path, { limit: PAGE_SIZE - rows.length, ...query, after: page.next_after });
      rows.push(...page.data);
      if (page.has_more !== true || page.next_after === null || page.next_after === undefined) break;
    }
    return { data: rows, has_more: page.has_more === true, next_after: page.next_after ?? null };
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
