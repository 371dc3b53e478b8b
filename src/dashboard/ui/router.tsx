// A small history router: the path picks the page, the query string holds the page's filters, so a
// view can be linked and reloaded. Links are plain <a href> (open in a new tab works); a click on
// one is turned into pushState.
import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useState } from 'preact/hooks';

export const BASE = '/dashboard';

export interface Route {
  /** The path below /dashboard, '' for the root: 'keys', 'webhooks/12'. */
  path: string;
  query: URLSearchParams;
  navigate(to: string, opts?: { replace?: boolean }): void;
  /** Sets (or, with '' / null, removes) query parameters, keeping the rest. */
  setQuery(patch: Record<string, string | null>, opts?: { replace?: boolean }): void;
}

const RouteContext = createContext<Route | null>(null);

function current(): { path: string; search: string } {
  const p = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length).replace(/^\/+|\/+$/g, '') : '';
  return { path: p, search: location.search };
}

export function Router({ children }: { children: ComponentChildren }) {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const sync = () => setLoc(current());
    addEventListener('popstate', sync);
    const click = (e: MouseEvent) => {
      if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
      const a = (e.target as Element | null)?.closest?.('a');
      if (!a || a.target || a.origin !== location.origin || !a.pathname.startsWith(BASE)) return;
      e.preventDefault();
      history.pushState(null, '', a.pathname + a.search);
      sync();
    };
    document.addEventListener('click', click);
    return () => {
      removeEventListener('popstate', sync);
      document.removeEventListener('click', click);
    };
  }, []);
  const go = (url: string, replace?: boolean) => {
    if (replace) history.replaceState(null, '', url);
    else history.pushState(null, '', url);
    setLoc(current());
  };
  const query = new URLSearchParams(loc.search);
  const route: Route = {
    path: loc.path,
    query,
    navigate: (to, opts) => go(`${BASE}/${to.replace(/^\/+/, '')}`, opts?.replace),
    setQuery: (patch, opts) => {
      const q = new URLSearchParams(loc.search);
      for (const [k, v] of Object.entries(patch)) {
        if (v === null || v === '') q.delete(k);
        else q.set(k, v);
      }
      const s = q.toString();
      go(`${BASE}/${loc.path}${s ? `?${s}` : ''}`, opts?.replace);
    },
  };
  return <RouteContext.Provider value={route}>{children}</RouteContext.Provider>;
}

export function useRoute(): Route {
  const r = useContext(RouteContext);
  if (!r) throw new Error('useRoute outside <Router>');
  return r;
}

export const href = (to: string, query?: Record<string, string>) => {
  const s = query ? new URLSearchParams(query).toString() : '';
  return `${BASE}/${to}${s ? `?${s}` : ''}`;
};
