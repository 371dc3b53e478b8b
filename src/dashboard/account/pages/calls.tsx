// Calls: the account's voice calls, outbound and inbound (GET /portal/voice/calls, the /v1 list as it
// is), newest first, filtered by status and direction (in the URL), paginated by the server, re-read
// every two seconds while a listed call is still going (every five otherwise, so a call an API
// client places shows up too).
import type { ComponentChildren } from 'preact';
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

/** An llm analysis's status ('analysed' rather than 'completed', which is the call's); '—' for none, or a pack's own (nothing was asked). */
const analysisStatus = (c: Call) => {
  const a = c.analysis;
  return !a || a.source === 'pack' ? '—' : a.status === 'completed' ? 'analysed' : a.status;
};

/** The list's status filter, kept in the URL (`?status=`); a change goes back to the first page. `children`: more filters beside it. */
export function StatusFilter({ statuses, children }: { statuses: readonly string[]; children?: ComponentChildren }) {
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
      {children}
    </div>
  );
}

export function CallsPage() {
  const route = useRoute();
  const status = route.query.get('status') ?? '';
  const direction = route.query.get('direction') ?? '';
  const { list, pager } = usePaged<Call>('/portal/voice/calls', { status, direction });
  usePoll(list.data?.data.some(going) ? 2000 : 5000, list.reload);
  return (
    <Page title="Calls">
      <p class="muted">
        Outbound calls placed with <code>POST /v1/voice/call</code> by any of the account's keys, and inbound calls to the account's{' '}
        <a href={href('numbers')}>numbers</a>.
      </p>
      <StatusFilter statuses={CALL_STATUSES}>
        <Field label="Direction">
          <select value={direction} onChange={(e) => route.setQuery({ direction: e.currentTarget.value, after: null })}>
            <option value="">All</option>
            <option value="inbound">inbound</option>
            <option value="outbound">outbound</option>
          </select>
        </Field>
      </StatusFilter>
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Voice calls"
          testId="calls"
          rows={list.data.data}
          rowKey={(c) => c.id}
          rowData={(c) => ['call-id', c.id]}
          empty={status || direction ? 'No call matches these filters.' : 'No calls yet.'}
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
            { label: 'Analysis', cell: analysisStatus },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
