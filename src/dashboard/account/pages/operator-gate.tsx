// The way into the operator pages: the admin token is exchanged once for a 15-minute operator
// session cookie (HttpOnly; the token is dropped from the page as soon as it is sent), then the
// operator bundle is loaded by dynamic import: account users never download it.
import type { ComponentType } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { SessionContext, useSession } from '../../ui/context.tsx';
import { asFailure, ErrorBox, Field, Page, useAction, utc } from '../../ui/components.tsx';
import { ApiFailure, type Api } from '../../ui/api.ts';

interface OperatorSession {
  expires_at: string;
}

export function OperatorGate() {
  const account = useSession();
  const { api } = account;
  const [session, setSession] = useState<OperatorSession | null | undefined>(undefined);
  // The operator pages' calls: a session that expired or was ended elsewhere brings the sign-in back.
  const operatorApi = useMemo<Api>(() => {
    const ended = (e: unknown): never => {
      if (e instanceof ApiFailure && e.status === 401 && e.code === 'invalid_admin_token') setSession(null);
      throw e;
    };
    return {
      get: <T,>(path: string, query?: Parameters<Api['get']>[1]) => api.get<T>(path, query).catch(ended),
      send: <T,>(method: Parameters<Api['send']>[0], path: string, body?: unknown, headers?: Record<string, string>) =>
        api.send<T>(method, path, body, headers).catch(ended),
      raw: (method, path, body) => api.raw(method, path, body).catch(ended),
    };
  }, [api]);
  // And at its expiry, without waiting for a call to fail.
  useEffect(() => {
    if (!session) return;
    const timer = setTimeout(() => setSession(null), Math.max(0, Date.parse(session.expires_at) - Date.now()));
    return () => clearTimeout(timer);
  }, [session]);
  const [Operator, setOperator] = useState<ComponentType<{ onSignOut(): void }> | null>(null);
  const [loadError, setLoadError] = useState<ApiFailure | null>(null);
  const act = useAction();

  useEffect(() => {
    api.get<OperatorSession>('/admin/session').then(setSession, () => setSession(null));
  }, []);
  useEffect(() => {
    if (!session || Operator) return;
    import('../../operator/operator.tsx').then(
      (m) => setOperator(() => m.OperatorApp),
      (e) => setLoadError(asFailure(e)),
    );
  }, [session]);

  if (session === undefined) return <p class="muted">Loading…</p>;
  if (session === null)
    return (
      <Page title="Operator sign-in">
        <form
          class="card narrow"
          onSubmit={(e) => {
            e.preventDefault();
            const input = e.currentTarget.elements.namedItem('token') as HTMLInputElement;
            const token = input.value;
            input.value = ''; // never kept in the page
            void act.run(async () => setSession(await api.send<OperatorSession>('POST', '/admin/session', undefined, { authorization: `Bearer ${token}` })));
          }}
        >
          <p class="muted">The admin token opens a 15-minute operator session; the token itself is not kept.</p>
          <Field label="Admin token">
            <input name="token" type="password" autoComplete="off" required />
          </Field>
          <ErrorBox error={act.error} />
          <button type="submit" class="primary" disabled={act.busy}>
            Open operator session
          </button>
        </form>
      </Page>
    );
  return (
    <>
      <ErrorBox error={loadError} />
      <p class="muted">Operator session until {utc(session.expires_at)}.</p>
      {Operator ? (
        <SessionContext.Provider value={{ ...account, api: operatorApi }}>
          <Operator
            onSignOut={() =>
              void act.run(async () => {
                await api.send('DELETE', '/admin/session');
                setSession(null);
              })
            }
          />
        </SessionContext.Provider>
      ) : (
        <p class="muted">Loading…</p>
      )}
    </>
  );
}
