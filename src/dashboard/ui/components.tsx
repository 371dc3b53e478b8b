// Shared pieces: loading a resource, showing the gateway's error envelope, forms, pagers, formats.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.ts';

export interface Loaded<T> {
  data: T | null;
  error: ApiFailure | null;
  loading: boolean;
  reload(): void;
}

/** Runs `load` when `deps` change; a stale answer (deps changed meanwhile) is dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | null; error: ApiFailure | null; loading: boolean }>({ data: null, error: null, loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === seq.current && setState({ data, error: null, loading: false }),
      (error) => mine === seq.current && setState({ data: null, error: asFailure(error), loading: false }),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export function asFailure(e: unknown): ApiFailure {
  return e instanceof ApiFailure ? e : new ApiFailure(0, 'client_error', e instanceof Error ? e.message : String(e), null);
}

/** Runs an action, keeping its error (shown by <ErrorBox>) and a busy flag for the button. */
export function useAction() {
  const [error, setError] = useState<ApiFailure | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn();
    } catch (e) {
      setError(asFailure(e));
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, clear: () => setError(null) };
}

export function ErrorBox({ error }: { error: ApiFailure | null }) {
  if (!error) return null;
  return (
    <div class="error" role="alert">
      <strong>{error.message}</strong>
      <span class="muted">
        {' '}
        ({error.code}
        {error.requestId ? `, request ${error.requestId}` : ''})
      </span>
    </div>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <div class="notice" role="status">
      {children}
    </div>
  );
}

export function Field({ label, children, hint }: { label: string; children: ComponentChildren; hint?: string }) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is the children, inside the label
    <label class="field">
      <span>{label}</span>
      {children}
      {hint ? <small class="muted">{hint}</small> : null}
    </label>
  );
}

export function Page({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  useEffect(() => {
    document.title = `${title} · Gateway dashboard`;
  }, [title]);
  return (
    <section>
      <header class="page-head">
        <h1>{title}</h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

export function Loading({ loaded }: { loaded: Loaded<unknown> }) {
  if (loaded.error) return <ErrorBox error={loaded.error} />;
  if (loaded.loading && loaded.data === null)
    return (
      <p class="muted" aria-live="polite">
        Loading…
      </p>
    );
  return null;
}

/** "Next page" with the server's cursor; "First page" goes back to the start. */
export function Pager({ hasMore, onNext, onFirst, atFirst }: { hasMore: boolean; onNext(): void; onFirst(): void; atFirst: boolean }) {
  if (!hasMore && atFirst) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={atFirst} onClick={onFirst}>
        First page
      </button>
      <button type="button" disabled={!hasMore} onClick={onNext}>
        Next page
      </button>
    </nav>
  );
}

export const formValue = (e: { currentTarget: HTMLFormElement }, name: string): string => {
  const v = new FormData(e.currentTarget).get(name);
  return typeof v === 'string' ? v : '';
};

export const cents = (c: number | null | undefined) =>
  c === null || c === undefined ? '—' : `$${(c / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 4 })}`;

/** Dates in UTC, as the API's days are. */
export const utc = (iso: string | null | undefined) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : '—');

/** Unix seconds (the /v1 objects' times) in UTC. */
export const unix = (s: number | null | undefined) => (s ? utc(new Date(s * 1000).toISOString()) : '—');

/** Re-runs `reload` every `ms` (none: never) while the page is in view. */
export function usePoll(ms: number | null, reload: () => void) {
  useEffect(() => {
    if (ms === null) return;
    const t = setInterval(() => document.visibilityState === 'visible' && reload(), ms);
    return () => clearInterval(t);
  }, [ms]);
}

export const num = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toLocaleString('en-US'));

export function confirmed(question: string): boolean {
  return window.confirm(question);
}
