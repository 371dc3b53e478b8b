// Webhooks: create (the signing secret is shown once, then never again), list, send a test ping,
// re-enable a disabled one, delete; and each webhook's deliveries, paginated by the server. An
// organization's members see none of it (the API lets only the owner and admins manage webhooks).
import { useState } from 'preact/hooks';
import { useSession } from '../../ui/context.tsx';
import { confirmed, ErrorBox, Field, formValue, Loading, Notice, Page, useAction, useLoad, utc } from '../../ui/components.tsx';
import { WEBHOOK_EVENTS } from '../../ui/constants.ts';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import { href } from '../../ui/router.tsx';
import { SecretValue, useSecrets } from '../../ui/secret.tsx';
import { managesWebhooks } from '../../ui/roles.ts';
import type { DeliveryView, WebhookView } from '../../../webhooks/views.ts';

type Outcome = Pick<DeliveryView, 'ok' | 'status_code' | 'error' | 'latency_ms'>;

const outcome = (o: Outcome) => (o.ok ? `delivered (HTTP ${o.status_code}, ${o.latency_ms} ms)` : `failed: ${o.error ?? `HTTP ${o.status_code}`}`);

export function WebhooksPage() {
  const { me } = useSession();
  if (!managesWebhooks(me)) {
    return (
      <Page title="Webhooks">
        <p class="muted">Only the organization's owner or an admin manages its webhooks.</p>
      </Page>
    );
  }
  return <ManageWebhooks />;
}

function ManageWebhooks() {
  const { api } = useSession();
  const list = useLoad(() => api.get<{ data: WebhookView[] }>('/portal/webhooks'), []);
  const act = useAction();
  const [secrets, show] = useSecrets();
  const [notice, setNotice] = useState<string | null>(null);
  // biome-ignore lint/suspicious/noConfusingVoidType: an action may resolve to a message or to nothing (an async function with no return)
  const run = (fn: () => Promise<string | void>) =>
    act.run(async () => {
      setNotice(null);
      const said = await fn();
      if (said) setNotice(said);
      list.reload();
    });

  return (
    <Page title="Webhooks">
      <form
        class="card"
        aria-label="New webhook"
        onSubmit={(e) => {
          e.preventDefault();
          const events = new FormData(e.currentTarget).getAll('events').map(String);
          const url = formValue(e, 'url').trim();
          const form = e.currentTarget;
          void run(async () => {
            const w = await api.send<WebhookView & { secret: string }>('POST', '/portal/webhooks', { url, events });
            show('new', w.secret);
            form.reset();
          });
        }}
      >
        <h2>New webhook</h2>
        <Field label="Endpoint URL">
          <input name="url" type="url" required maxLength={2048} placeholder="https://example.com/hooks/gateway" />
        </Field>
        <fieldset>
          <legend>Events</legend>
          {WEBHOOK_EVENTS.map((ev) => (
            <label key={ev} class="check">
              <input type="checkbox" name="events" value={ev} defaultChecked={ev === 'low_balance'} /> {ev}
            </label>
          ))}
        </fieldset>
        <button type="submit" class="primary" disabled={act.busy}>
          Create webhook
        </button>
      </form>
      {secrets.get('new') ? (
        <Notice>
          Signing secret, shown only now: copy it to your receiver. <SecretValue value={secrets.get('new')!} label="Webhook signing secret" />
        </Notice>
      ) : null}
      {notice ? <Notice>{notice}</Notice> : null}
      <ErrorBox error={act.error} />
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Your webhooks"
          rows={list.data.data}
          rowKey={(w) => w.id}
          rowData={(w) => ['webhook-id', w.id]}
          empty="No webhooks yet."
          columns={[
            { label: 'URL', cell: (w) => <code>{w.url}</code> },
            { label: 'Events', cell: (w) => w.events.join(', ') },
            { label: 'Status', cell: (w) => w.status },
            { label: 'Failures in a row', cell: (w) => w.consecutive_failures },
            { label: 'Last delivery', cell: (w) => utc(w.last_delivery_at) },
            {
              label: 'Actions',
              srOnly: true,
              cell: (w) => (
                <>
                  <a href={href(`webhooks/${w.id}`)}>
                    Deliveries <span class="sr-only">of {w.url}</span>
                  </a>
                  <button
                    type="button"
                    disabled={act.busy}
                    onClick={() => run(async () => `Test ping: ${outcome(await api.send<Outcome>('POST', `/portal/webhooks/${w.id}/test`))}`)}
                  >
                    Send test <span class="sr-only">to {w.url}</span>
                  </button>
                  {w.status === 'disabled' ? (
                    <button type="button" disabled={act.busy} onClick={() => run(async () => void (await api.send('POST', `/portal/webhooks/${w.id}/enable`)))}>
                      Re-enable <span class="sr-only">{w.url}</span>
                    </button>
                  ) : null}
                  <button
                    type="button"
                    class="danger"
                    disabled={act.busy}
                    onClick={() =>
                      confirmed(`Delete the webhook to ${w.url}? Queued events are dropped.`) &&
                      run(async () => void (await api.send('DELETE', `/portal/webhooks/${w.id}`)))
                    }
                  >
                    Delete <span class="sr-only">{w.url}</span>
                  </button>
                </>
              ),
            },
          ]}
        />
      ) : null}
    </Page>
  );
}

export function WebhookDeliveriesPage({ id }: { id: string }) {
  const { api } = useSession();
  const hook = useLoad(() => api.get<WebhookView>(`/portal/webhooks/${encodeURIComponent(id)}`), [id]);
  const { list, pager } = usePaged<DeliveryView>(`/portal/webhooks/${encodeURIComponent(id)}/deliveries`);
  return (
    <Page title="Webhook deliveries">
      <p>
        <a href={href('webhooks')}>All webhooks</a>
      </p>
      <Loading loaded={hook} />
      {hook.data ? (
        <p>
          <code>{hook.data.url}</code> · {hook.data.status}
        </p>
      ) : null}
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Delivery attempts"
          testId="deliveries"
          rows={list.data.data}
          rowKey={(d) => d.id}
          empty="No deliveries yet."
          columns={[
            { label: 'Time', cell: (d) => utc(d.ts) },
            { label: 'Event', cell: (d) => d.event },
            { label: 'Outcome', cell: (d) => outcome(d) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
