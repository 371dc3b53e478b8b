// The account app: who is signed in (GET /portal/session, by the HttpOnly cookie the page cannot
// read: 200 whether or not anyone is, so a signed-out visit makes no failing request), the layout
// with navigation, and which page the path shows.
import { useEffect, useLayoutEffect, useMemo, useState } from 'preact/hooks';
import { createApi } from '../ui/api.ts';
import { SessionContext, type Me, type Session, type SessionState } from '../ui/context.tsx';
import { Router, useRoute } from '../ui/router.tsx';
import { Layout } from './layout.tsx';
import { SignIn, SignUp } from './pages/auth.tsx';
import { KeysPage } from './pages/keys.tsx';
import { UsagePage } from './pages/usage.tsx';
import { WalletPage } from './pages/wallet.tsx';
import { SettingsPage } from './pages/settings.tsx';
import { WebhooksPage, WebhookDeliveriesPage } from './pages/webhooks.tsx';
import { OrgPage } from './pages/org.tsx';
import { JobsPage } from './pages/jobs.tsx';
import { JobPage } from './pages/job.tsx';
import { CallsPage } from './pages/calls.tsx';
import { CallPage } from './pages/call.tsx';
import { NumbersPage } from './pages/numbers.tsx';
import { CampaignsGate } from './pages/campaigns-gate.tsx';
import { TrySpeechPage } from './pages/try-speech.tsx';
import { TryRecognitionPage } from './pages/try-recognition.tsx';
import { OperatorGate } from './pages/operator-gate.tsx';

export function App() {
  return (
    <Router>
      <Shell />
    </Router>
  );
}

const PUBLIC = new Set(['signin', 'signup']);

/** Where to go after sign-in: the page the visitor asked for (a dashboard path only), else keys. */
const nextPage = (next: string | null) => (next && /^[a-z][a-z0-9/_-]{0,100}$/.test(next) ? next : 'keys');

function Shell() {
  const route = useRoute();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  const api = useMemo(() => createApi(() => setMe(null)), []);
  const refresh = async () => {
    const s = await api.get<SessionState>('/portal/session').catch(() => null);
    const m = s?.signed_in ? { user: s.user, organization: s.organization } : null;
    setMe(m);
    return m;
  };
  useEffect(() => void refresh(), []);
  const session: Session = { api, me: me ?? null, refresh };
  const top = route.path.split('/')[0] ?? '';

  // A layout effect: the address changes in the same task that shows the page, so no one ever sees
  // the sign-in form under /dashboard/keys (nor a test read the old address).
  useLayoutEffect(() => {
    if (me === null && !PUBLIC.has(top) && top !== 'operator')
      route.navigate(`signin${route.path ? `?next=${encodeURIComponent(route.path)}` : ''}`, { replace: true });
    if (me && (PUBLIC.has(top) || top === '')) route.navigate(nextPage(route.query.get('next')), { replace: true });
  }, [me, top]);

  if (me === undefined) return <p class="muted boot">Loading…</p>;
  return (
    <SessionContext.Provider value={session}>
      {me === null && top !== 'operator' ? (
        <main class="auth">{top === 'signup' ? <SignUp /> : <SignIn />}</main>
      ) : (
        <Layout>
          <Content top={top} />
        </Layout>
      )}
    </SessionContext.Provider>
  );
}

function Content({ top }: { top: string }) {
  const route = useRoute();
  const rest = route.path.split('/').slice(1);
  switch (top) {
    case 'keys':
      return <KeysPage />;
    case 'usage':
      return <UsagePage />;
    case 'wallet':
      return <WalletPage />;
    case 'settings':
      return <SettingsPage />;
    case 'webhooks':
      return rest[0] ? <WebhookDeliveriesPage id={rest[0]} /> : <WebhooksPage />;
    case 'organization':
      return <OrgPage />;
    case 'jobs':
      return rest[0] ? <JobPage id={rest[0]} /> : <JobsPage />;
    case 'calls':
      return rest[0] ? <CallPage id={rest[0]} /> : <CallsPage />;
    case 'numbers':
      return <NumbersPage />;
    case 'campaigns':
      return <CampaignsGate rest={rest} />;
    case 'speech':
      return <TrySpeechPage />;
    case 'recognition':
      return <TryRecognitionPage />;
    case 'operator':
      return <OperatorGate />;
    default:
      return <KeysPage />;
  }
}
