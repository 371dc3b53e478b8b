// Billing settings: the low-balance alert threshold (an organization's: the owner sets it, and the
// API answers anyone else 403; they see it read-only).
import { useSession } from '../../ui/context.tsx';
import { cents, ErrorBox, Field, formValue, Loading, Notice, Page, useAction, useLoad } from '../../ui/components.tsx';
import { useState } from 'preact/hooks';
import { managesBilling } from '../../ui/roles.ts';

export function SettingsPage() {
  const { api, me } = useSession();
  const wallet = useLoad(() => api.get<{ low_balance_threshold_cents: number }>('/portal/wallet'), []);
  const act = useAction();
  const [saved, setSaved] = useState<number | null>(null);
  const current = wallet.data?.low_balance_threshold_cents;
  return (
    <Page title="Settings">
      <Loading loaded={wallet} />
      {current !== undefined && !managesBilling(me) ? (
        <div class="card">
          <h2>Low-balance alert</h2>
          <p data-testid="threshold">Alert below {current > 0 ? cents(current) : '— (off)'}.</p>
          <p class="muted">Only the organization's owner changes it.</p>
        </div>
      ) : null}
      {wallet.data && managesBilling(me) ? (
        <form
          class="card"
          aria-label="Low-balance alert"
          onSubmit={(e) => {
            e.preventDefault();
            const dollars = formValue(e, 'threshold');
            const c = Math.round(Number(dollars) * 100);
            setSaved(null);
            void act.run(async () => {
              const r = await api.send<{ low_balance_threshold_cents: number }>('PUT', '/portal/settings', { low_balance_threshold_cents: c });
              setSaved(r.low_balance_threshold_cents);
              wallet.reload();
            });
          }}
        >
          <h2>Low-balance alert</h2>
          <p class="muted">A low_balance webhook event fires when the wallet falls below this amount. 0 turns it off.</p>
          <Field label="Threshold in dollars">
            <input
              name="threshold"
              type="number"
              min={0}
              step="0.01"
              required
              defaultValue={current !== undefined ? (current / 100).toFixed(2) : ''}
              key={current}
            />
          </Field>
          <ErrorBox error={act.error} />
          {saved !== null ? <Notice>Saved: alert below {saved > 0 ? cents(saved) : '— (off)'}.</Notice> : null}
          <button type="submit" class="primary" disabled={act.busy}>
            Save
          </button>
        </form>
      ) : null}
    </Page>
  );
}
