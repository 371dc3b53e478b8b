// The account's wallet (its organization's while the user belongs to one): balance, what calls in
// flight hold, subscription, identity verification (KYC) and the top-up history.
import { useSession } from '../../ui/context.tsx';
import { cents, Loading, Page, useLoad, utc } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';

interface Wallet {
  owner_type: 'user' | 'org';
  owner_id: number;
  balance_cents: number;
  available_cents: number;
  held_cents: number;
  low_balance_threshold_cents: number;
  /** The user's identity verification, or the organization owner's while the wallet is the organization's. */
  kyc_verified: boolean;
}
interface Subscription {
  status: string;
  plan: string | null;
  current_period_start: string | null;
  next_renewal_at: string | null;
  cycles_credited: number;
}
interface Topup {
  id: string;
  amount_cents: number;
  reference: string | null;
  kind: string;
  status: string;
  new_balance_cents: number | null;
  created_at: string;
  credited_at: string | null;
}

export function WalletPage() {
  const { api } = useSession();
  const wallet = useLoad(() => api.get<Wallet>('/portal/wallet'), []);
  const sub = useLoad(() => api.get<Subscription>('/portal/subscription'), []);
  const { list: topups, pager } = usePaged<Topup>('/portal/wallet/topups');
  const w = wallet.data;
  return (
    <Page title="Wallet">
      <Loading loaded={wallet} />
      {w ? (
        <div class="card">
          <h2>{w.owner_type === 'org' ? "Your organization's wallet" : 'Your wallet'}</h2>
          <dl class="facts">
            <dt>Balance</dt>
            <dd data-testid="balance">{cents(w.balance_cents)}</dd>
            <dt>Available to new calls</dt>
            <dd>{cents(w.available_cents)}</dd>
            <dt>Held by calls in flight</dt>
            <dd>{cents(w.held_cents)}</dd>
            <dt>Low-balance alert below</dt>
            <dd>{w.low_balance_threshold_cents > 0 ? cents(w.low_balance_threshold_cents) : 'off'}</dd>
            <dt>Identity verification</dt>
            <dd data-testid="kyc">{w.kyc_verified ? 'verified' : 'not verified'}</dd>
          </dl>
        </div>
      ) : null}
      <div class="card">
        <h2>Subscription</h2>
        <Loading loaded={sub} />
        {sub.data ? (
          <dl class="facts" data-testid="subscription">
            <dt>Status</dt>
            <dd>{sub.data.status}</dd>
            <dt>Plan</dt>
            <dd>{sub.data.plan ?? '—'}</dd>
            <dt>Current period since</dt>
            <dd>{utc(sub.data.current_period_start)}</dd>
            <dt>Next renewal</dt>
            <dd>{utc(sub.data.next_renewal_at)}</dd>
          </dl>
        ) : null}
      </div>
      <h2>Top-ups</h2>
      <Loading loaded={topups} />
      {topups.data ? (
        <DataTable
          caption="Top-up history"
          testId="topups"
          rows={topups.data.data}
          rowKey={(t) => t.id}
          empty="No top-ups yet."
          columns={[
            { label: 'Date', cell: (t) => utc(t.credited_at ?? t.created_at) },
            { label: 'Amount', num: true, cell: (t) => cents(t.amount_cents) },
            { label: 'Kind', cell: (t) => t.kind },
            { label: 'Reference', cell: (t) => t.reference ?? '—' },
            { label: 'Status', cell: (t) => t.status },
            { label: 'Balance after', num: true, cell: (t) => cents(t.new_balance_cents) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
