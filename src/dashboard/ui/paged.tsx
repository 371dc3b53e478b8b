// A server-paginated list whose cursor lives in the URL (`?after=`, or another name when a page
// shows two lists), so a page of a list can be linked and reloaded.
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
  const list = useLoad(() => api.get<ListPage<T>>(path, { limit: PAGE_SIZE, ...query, after }), [path, key, after]);
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
