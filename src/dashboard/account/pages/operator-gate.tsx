// The way into the operator pages: the admin token is exchanged once for a 15-minute operator
// session cookie (HttpOnly; the token is dropped from the page as soon as it is sent), then the
// operator bundle is loaded by dynamic import: account users never download it.
import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { asFailure, ErrorBox, Field, Page, useAction, utc } from '../../ui/components.tsx';
import type { ApiFailure } from '../../ui/api.ts';

interface OperatorSession {
  expires_at: string;
}

export function OperatorGate() {
  const { api } = useSession();
  const [session, setSession] = useState<OperatorSession | null | undefined>(undefined);
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
        <Operator
          onSignOut={() =>
            void act.run(async () => {
              await api.send('DELETE', '/admin/session');
              setSession(null);
            })
          }
        />
      ) : (
        <p class="muted">Loading…</p>
      )}
    </>
  );
}
