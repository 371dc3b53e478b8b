// Loads the Campaigns pages' chunk (campaigns-routes.tsx) the first time a campaigns address is
// opened; the browser keeps the module, so later visits render at once.
import type { FunctionComponent } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ApiFailure } from '../../ui/api.ts';
import { asFailure, ErrorBox } from '../../ui/components.tsx';

type Routes = FunctionComponent<{ rest: string[] }>;

export function CampaignsGate({ rest }: { rest: string[] }) {
  const [Routes, setRoutes] = useState<Routes | null>(null);
  const [error, setError] = useState<ApiFailure | null>(null);
  useEffect(() => {
    import('./campaigns-routes.tsx').then(
      (m) => setRoutes(() => m.CampaignsRoutes),
      (e) => setError(asFailure(e)),
    );
  }, []);
  if (error) return <ErrorBox error={error} />;
  return Routes ? <Routes rest={rest} /> : <p class="muted">Loading…</p>;
}
