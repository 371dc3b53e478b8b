// API keys: a server-paginated list searched over all the account's keys (the search and status are
// in the URL), create with name, expiry, scopes and limits, reveal a full key of any status on an
// explicit click (the spec keeps full keys retrievable at any time; gone from the page after a
// minute), revoke an active one.
import { useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { confirmed, ErrorBox, Field, formValue, Loading, Page, useAction, utc, num } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import { useRoute } from '../../ui/router.tsx';
import { SCOPES } from '../../ui/constants.ts';
import { SecretValue, useSecrets } from '../../ui/secret.tsx';

export interface Key {
  id: number;
  name: string;
  prefix: string;
  scopes: string[];
  expires_at: string | null;
  created_at: string;
  last_used_at: string | null;
  status: string;
  rpm: number | null;
  tpd: number | null;
  cpd: number | null;
  cpm: number | null;
}

const LIMITS = ['rpm', 'tpd', 'cpd', 'cpm'] as const;

export function KeysPage() {
  const { api } = useSession();
  const route = useRoute();
  const search = route.query.get('search') ?? '';
  const status = route.query.get('status') ?? '';
  const { list, pager } = usePaged<Key>('/portal/keys', { search, status });
  const [secrets, show, hide] = useSecrets();
  const act = useAction();
  const [creating, setCreating] = useState(false);

  const reveal = (k: Key) =>
    void act.run(async () => {
      const full = await api.get<Key & { api_key: string }>(`/portal/keys/${k.id}`);
      show(String(k.id), full.api_key);
    });
  const revoke = (k: Key) => {
    if (!confirmed(`Revoke the key "${k.name}" (${k.prefix})? Requests with it fail from the next one on.`)) return;
    void act.run(async () => {
      await api.send('DELETE', `/portal/keys/${k.id}`);
      hide(String(k.id));
      list.reload();
    });
  };

  return (
    <Page
      title="API keys"
      actions={
        <button type="button" class="primary" onClick={() => setCreating(!creating)} aria-expanded={creating}>
          Create key
        </button>
      }
    >
      {creating ? (
        <CreateKey
          onCreated={(k) => {
            setCreating(false);
            show(String(k.id), k.api_key);
            route.setQuery({ search: null, status: null, after: null });
            list.reload();
          }}
        />
      ) : null}
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          route.setQuery({ search: formValue(e, 'search').trim(), status: formValue(e, 'status'), after: null });
        }}
      >
        <Field label="Search name or prefix">
          <input name="search" type="search" defaultValue={search} key={search} maxLength={100} />
        </Field>
        <Field label="Status">
          <select name="status" defaultValue={status} key={status}>
            <option value="">All</option>
            <option value="active">Active</option>
            <option value="revoked">Revoked</option>
            <option value="expired">Expired</option>
          </select>
        </Field>
        <button type="submit">Search</button>
      </form>
      <ErrorBox error={act.error} />
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Your API keys"
          rows={list.data.data}
          rowKey={(k) => k.id}
          rowData={(k) => ['key-id', k.id]}
          empty={search || status ? 'No key matches.' : 'No keys yet.'}
          columns={[
            { label: 'Name', cell: (k) => k.name },
            {
              label: 'Prefix',
              cell: (k) => (
                <>
                  <code>{k.prefix}</code>
                  {secrets.get(String(k.id)) ? <SecretValue value={secrets.get(String(k.id))!} label={`Full key ${k.name}`} /> : null}
                </>
              ),
            },
            { label: 'Scopes', cell: (k) => k.scopes.join(', ') },
            { label: 'Status', cell: (k) => k.status },
            { label: 'Expires', cell: (k) => utc(k.expires_at) },
            { label: 'Last used', cell: (k) => utc(k.last_used_at) },
            {
              label: 'Limits',
              cell: (k) =>
                LIMITS.filter((l) => k[l] !== null)
                  .map((l) => `${l} ${num(k[l])}`)
                  .join(', ') || '—',
            },
            {
              label: 'Actions',
              srOnly: true,
              cell: (k) => <KeyActions k={k} shown={secrets.has(String(k.id))} busy={act.busy} reveal={reveal} hide={hide} revoke={revoke} />,
            },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}

function KeyActions({
  k,
  shown,
  busy,
  reveal,
  hide,
  revoke,
}: {
  k: Key;
  shown: boolean;
  busy: boolean;
  reveal(k: Key): void;
  hide(id: string): void;
  revoke(k: Key): void;
}) {
  return (
    <>
      {shown ? (
        <button type="button" onClick={() => hide(String(k.id))}>
          Hide <span class="sr-only">{k.name}</span>
        </button>
      ) : (
        <button type="button" onClick={() => reveal(k)} disabled={busy}>
          Reveal <span class="sr-only">{k.name}</span>
        </button>
      )}
      {k.status === 'active' ? (
        <button type="button" class="danger" onClick={() => revoke(k)} disabled={busy}>
          Revoke <span class="sr-only">{k.name}</span>
        </button>
      ) : null}
    </>
  );
}

function CreateKey({ onCreated }: { onCreated(k: Key & { api_key: string }): void }) {
  const { api } = useSession();
  const act = useAction();
  return (
    <form
      class="card"
      aria-label="New key"
      onSubmit={(e) => {
        e.preventDefault();
        const data = new FormData(e.currentTarget);
        const expiry = formValue(e, 'expires');
        const scopes = data.getAll('scopes').map(String);
        const limits: Record<string, number> = {};
        for (const l of LIMITS) {
          const v = formValue(e, l);
          if (v !== '') limits[l] = Number(v);
        }
        void act.run(async () => {
          const body: Record<string, unknown> = { name: formValue(e, 'name').trim() };
          if (expiry) body.expires_at = `${expiry}T23:59:59Z`;
          if (scopes.length > 0) body.scopes = scopes;
          const k = await api.send<Key & { api_key: string }>('POST', '/portal/keys', body);
          if (Object.keys(limits).length > 0) await api.send('PATCH', `/portal/keys/${k.id}`, limits);
          onCreated(k);
        });
      }}
    >
      <h2>New key</h2>
      <Field label="Name">
        <input name="name" required maxLength={100} />
      </Field>
      <Field label="Expires (end of this UTC day)" hint="Empty: never.">
        <input name="expires" type="date" />
      </Field>
      <fieldset>
        <legend>Scopes (none ticked: all)</legend>
        {SCOPES.filter((s) => s !== '*').map((s) => (
          <label key={s} class="check">
            <input type="checkbox" name="scopes" value={s} /> {s}
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Your own limits (empty: none)</legend>
        {LIMITS.map((l) => (
          <Field key={l} label={{ rpm: 'Requests a minute', tpd: 'Tokens a day', cpd: 'Cents a day', cpm: 'Cents a month' }[l]}>
            <input name={l} type="number" min={1} step={1} inputMode="numeric" />
          </Field>
        ))}
      </fieldset>
      <ErrorBox error={act.error} />
      <button type="submit" class="primary" disabled={act.busy}>
        Create
      </button>
    </form>
  );
}
