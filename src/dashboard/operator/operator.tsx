// The operator bundle (loaded only after operator sign-in): models and routes (an upstream key is
// never shown, only whether one is set), accounts (find by e-mail, identity verification, model
// access), top-ups, key limits, intent packs.
import { useSession } from '../ui/context.tsx';
import { cents, ErrorBox, Field, formValue, Loading, Notice, Page, useAction, useLoad, utc } from '../ui/components.tsx';
import { href, useRoute } from '../ui/router.tsx';
import { DataTable } from '../ui/table.tsx';
import { useState } from 'preact/hooks';

interface Route {
  provider: string;
  upstream_model: string;
  base_url?: string;
  api_key?: string;
  api_key_set?: boolean;
  api_key_env?: string;
}
interface Model {
  id: string;
  type: string;
  routes: Route[];
  pricing?: Record<string, number>;
  updated_at: string;
}

const TABS: [string, string][] = [
  ['models', 'Models'],
  ['accounts', 'Accounts and access'],
  ['topups', 'Top-ups'],
  ['keys', 'Key limits'],
  ['intent', 'Intent packs'],
];

export function OperatorApp({ onSignOut }: { onSignOut(): void }) {
  const route = useRoute();
  const tab = route.query.get('tab') ?? 'models';
  return (
    <Page
      title="Operator"
      actions={
        <button type="button" onClick={onSignOut}>
          End operator session
        </button>
      }
    >
      <nav aria-label="Operator sections" class="filters tabs">
        {TABS.map(([t, label]) => (
          <a key={t} href={href('operator', { tab: t })} aria-current={tab === t ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {tab === 'accounts' ? <Accounts /> : tab === 'topups' ? <Topups /> : tab === 'keys' ? <KeyLimits /> : tab === 'intent' ? <IntentPacks /> : <Models />}
    </Page>
  );
}

/** What the operator sees of an upstream key: whether one is set, never its value. */
const keyState = (r: Route) => (r.api_key_env ? `from $${r.api_key_env}` : r.api_key_set || r.api_key ? 'set' : 'none');

function Models() {
  const { api } = useSession();
  const models = useLoad(() => api.get<{ data: Model[] }>('/admin/models'), []);
  return (
    <>
      <Loading loaded={models} />
      {models.data ? (
        <DataTable
          caption="Virtual models"
          testId="models"
          rows={models.data.data}
          rowKey={(m) => m.id}
          empty="No models yet."
          columns={[
            { label: 'Model', cell: (m) => <code>{m.id}</code> },
            { label: 'Type', cell: (m) => m.type },
            {
              label: 'Routes (in failover order)',
              cell: (m) => (
                <ol>
                  {m.routes.map((r, i) => (
                    <li key={i}>
                      {r.provider} · <code>{r.upstream_model}</code>
                      {r.base_url ? ` · ${r.base_url}` : ''} · key {keyState(r)}
                    </li>
                  ))}
                </ol>
              ),
            },
            { label: 'Updated', cell: (m) => utc(m.updated_at) },
          ]}
        />
      ) : null}
    </>
  );
}

interface Owner {
  type: 'user' | 'org';
  id: number;
}

function Accounts() {
  const { api } = useSession();
  const act = useAction();
  const [found, setFound] = useState<{ id: number; email: string; kyc_verified?: boolean; organization?: { id: number; role: string } | null }[] | null>(null);
  const [owner, setOwner] = useState<Owner | null>(null);
  const [access, setAccess] = useState<string[] | null | undefined>(undefined);
  const load = (o: Owner) =>
    act.run(async () => {
      setOwner(o);
      setAccess((await api.get<{ models: string[] | null }>(`/admin/access/${o.type}/${o.id}`)).models);
    });
  return (
    <>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          const email = formValue(e, 'email').trim();
          void act.run(async () => setFound((await api.get<{ data: { id: number; email: string }[] }>('/admin/users', { email })).data));
        }}
      >
        <Field label="Find a user by e-mail">
          <input name="email" type="search" required maxLength={254} />
        </Field>
        <button type="submit">Find</button>
      </form>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          void load({ type: formValue(e, 'type') as Owner['type'], id: Number(formValue(e, 'id')) });
        }}
      >
        <OwnerFields />
        <button type="submit">Show access</button>
      </form>
      <ErrorBox error={act.error} />
      {found ? (
        <ul data-testid="users">
          {found.length === 0 ? <li class="muted">No user with that e-mail.</li> : null}
          {found.map((u) => (
            <li key={u.id}>
              {u.email} (user {u.id}){u.kyc_verified !== undefined ? `, KYC ${u.kyc_verified ? 'verified' : 'not verified'}` : ''}
              {u.organization ? `, ${u.organization.role} of org ${u.organization.id}` : ''}{' '}
              <button type="button" onClick={() => load({ type: 'user', id: u.id })}>
                Model access <span class="sr-only">of {u.email}</span>
              </button>{' '}
              <button
                type="button"
                disabled={act.busy}
                onClick={() =>
                  act.run(async () => {
                    const r = await api.send<{ kyc_verified: boolean }>('PUT', `/admin/users/${u.id}/kyc`, { verified: !u.kyc_verified });
                    setFound(found.map((x) => (x.id === u.id ? { ...x, kyc_verified: r.kyc_verified } : x)));
                  })
                }
              >
                {u.kyc_verified ? 'Withdraw verification' : 'Mark verified'} <span class="sr-only">{u.email}</span>
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      {owner && access !== undefined ? (
        <form
          class="card"
          aria-label="Model access"
          onSubmit={(e) => {
            e.preventDefault();
            const list = formValue(e, 'models')
              .split(/[\s,]+/)
              .filter(Boolean);
            void act.run(async () =>
              setAccess(
                (await api.send<{ models: string[] | null }>('PUT', `/admin/access/${owner.type}/${owner.id}`, { models: list.length > 0 ? list : null }))
                  .models,
              ),
            );
          }}
        >
          <h2>
            Model access of {owner.type} {owner.id}
          </h2>
          <p data-testid="access">{access === null ? 'Every model.' : `Only: ${access.join(', ') || '(none)'}`}</p>
          <Field label="Allowed models (comma separated; empty: every model)">
            <input name="models" defaultValue={access?.join(', ') ?? ''} key={String(access)} />
          </Field>
          <button type="submit" class="primary" disabled={act.busy}>
            Save access
          </button>
        </form>
      ) : null}
    </>
  );
}

/** An account: its type (user or org) and id, read from the form as `type` and `id`. */
function OwnerFields() {
  return (
    <>
      <Field label="Account type">
        <select name="type">
          <option value="user">user</option>
          <option value="org">org</option>
        </select>
      </Field>
      <Field label="Account id">
        <input name="id" type="number" min={1} required />
      </Field>
    </>
  );
}

function Topups() {
  const { api } = useSession();
  const act = useAction();
  const [done, setDone] = useState<string | null>(null);
  return (
    <form
      class="card"
      aria-label="Top-up"
      onSubmit={(e) => {
        e.preventDefault();
        const type = formValue(e, 'type');
        const body: Record<string, unknown> = {
          [type === 'org' ? 'org_id' : 'user_id']: Number(formValue(e, 'id')),
          amount_cents: Math.round(Number(formValue(e, 'amount')) * 100),
        };
        const reference = formValue(e, 'reference').trim();
        if (reference) body.reference = reference;
        setDone(null);
        void act.run(async () => {
          const t = await api.send<{ amount_cents: number; new_balance_cents: number | null }>('POST', '/admin/topups', body);
          setDone(`Credited ${cents(t.amount_cents)}; balance now ${cents(t.new_balance_cents)}.`);
        });
      }}
    >
      <h2>Confirm a manual payment</h2>
      <OwnerFields />
      <Field label="Amount in dollars">
        <input name="amount" type="number" min="0.01" step="0.01" required />
      </Field>
      <Field label="Payment reference" hint="The same reference is credited once.">
        <input name="reference" maxLength={200} />
      </Field>
      <ErrorBox error={act.error} />
      {done ? <Notice>{done}</Notice> : null}
      <button type="submit" class="primary" disabled={act.busy}>
        Credit wallet
      </button>
    </form>
  );
}

const LIMITS = ['rpm', 'tpd', 'cpd', 'cpm'] as const;

function KeyLimits() {
  const { api } = useSession();
  const act = useAction();
  const [saved, setSaved] = useState<Record<string, unknown> | null>(null);
  return (
    <form
      class="card"
      aria-label="Key limits"
      onSubmit={(e) => {
        e.preventDefault();
        const body: Record<string, number | null> = {};
        for (const l of LIMITS) {
          const v = formValue(e, l).trim();
          if (v === '-') body[l] = null;
          else if (v !== '') body[l] = Number(v);
        }
        const id = formValue(e, 'id');
        void act.run(async () => setSaved(await api.send<Record<string, unknown>>('PATCH', `/admin/keys/${encodeURIComponent(id)}`, body)));
      }}
    >
      <h2>Administrator limits on a key</h2>
      <Field label="Key id">
        <input name="id" type="number" min={1} required />
      </Field>
      {LIMITS.map((l) => (
        <Field key={l} label={l} hint="Empty: unchanged; - removes the limit.">
          <input name={l} pattern="-|[0-9]{1,12}" />
        </Field>
      ))}
      <ErrorBox error={act.error} />
      {saved ? <Notice>Saved: {LIMITS.map((l) => `${l} ${saved[l] ?? 'none'}`).join(', ')}.</Notice> : null}
      <button type="submit" class="primary" disabled={act.busy}>
        Save limits
      </button>
    </form>
  );
}

function IntentPacks() {
  const { api } = useSession();
  const packs = useLoad(() => api.get<{ data: { id: string; version?: string | number; revision?: number; source?: string }[] }>('/admin/intent-packs'), []);
  return (
    <>
      <Loading loaded={packs} />
      {packs.data ? (
        <DataTable
          caption="Intent packs"
          testId="intent-packs"
          rows={packs.data.data}
          rowKey={(p) => p.id}
          empty="No intent packs."
          columns={[
            { label: 'Pack', cell: (p) => <code>{p.id}</code> },
            { label: 'Version', cell: (p) => p.version ?? '—' },
            { label: 'Revision', cell: (p) => p.revision ?? '—' },
            { label: 'Source', cell: (p) => p.source ?? '—' },
          ]}
        />
      ) : null}
    </>
  );
}
