// Calls: the account's outbound voice calls (GET /portal/voice/calls, the /v1 list as it is), newest
// first, filtered by status (in the URL), paginated by the server, re-read every two seconds while a
// listed call is still going (every five otherwise, so a call an API client places shows up too).
import { cents, Field, Loading, num, Page, unix, usePoll } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import { href, useRoute } from '../../ui/router.tsx';
import { clock } from '../../ui/speech.tsx';
import { CALL_STATUSES } from '../../ui/constants.ts';
import type { VoiceCallObject } from '../../../voice/views.ts';

/** A call as /portal/voice/calls answers it (the /v1 voice.call object), and one turn of its transcript. */
export type Call = VoiceCallObject;
export type CallTurn = NonNullable<Call['transcript']>[number];

const ENDED = new Set<string>(['completed', 'busy', 'no_answer', 'failed', 'canceled']);
/** Not over yet: still going, or ended and not yet billed. */
export const going = (c: Call) => !ENDED.has(c.status) || c.cost_cents === null || c.cost_cents === undefined;
export const label = (s: string | null | undefined) => (s ? s.replace(/_/g, ' ') : '—');
export const seconds = (s: number | null | undefined) => (s === null || s === undefined ? '—' : clock(s));

/** The list's status filter, kept in the URL (`?status=`); a change goes back to the first page. */
export function StatusFilter({ statuses }: { statuses: readonly string[] }) {
  const route = useRoute();
  return (
    <div class="filters">
      <Field label="Status">
        <select value={route.query.get('status') ?? ''} onChange={(e) => route.setQuery({ status: e.currentTarget.value, after: null })}>
          <option value="">All</option>
          {statuses.map((s) => (
            <option key={s} value={s}>
              {label(s)}
            </option>
          ))}
        </select>
      </Field>
    </div>
  );
}

export function CallsPage() {
  const route = useRoute();
  const status = route.query.get('status') ?? '';
  const { list, pager } = usePaged<Call>('/portal/voice/calls', { status });
  usePoll(list.data?.data.some(going) ? 2000 : 5000, list.reload);
  return (
    <Page title="Calls">
      <p class="muted">
        Outbound calls placed with <code>POST /v1/voice/call</code> by any of the account's keys.
      </p>
      <StatusFilter statuses={CALL_STATUSES} />
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Voice calls"
          testId="calls"
          rows={list.data.data}
          rowKey={(c) => c.id}
          rowData={(c) => ['call-id', c.id]}
          empty={status ? 'No call has this status.' : 'No calls yet.'}
          columns={[
            { label: 'Call', cell: (c) => <a href={href(`calls/${c.id}`)}>{c.id}</a> },
            { label: 'Direction', cell: (c) => label(c.direction ?? 'outbound') },
            { label: 'To', cell: (c) => c.to },
            { label: 'Model', cell: (c) => c.model },
            { label: 'Status', cell: (c) => label(c.status) },
            { label: 'End reason', cell: (c) => label(c.end_reason) },
            { label: 'Started', cell: (c) => unix(c.created_at) },
            { label: 'Duration', num: true, cell: (c) => seconds(c.duration_seconds) },
            { label: 'Billed seconds', num: true, cell: (c) => num(c.billed_seconds) },
            { label: 'Cost', num: true, cell: (c) => cents(c.cost_cents) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
