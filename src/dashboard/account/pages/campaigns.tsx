// Campaigns: the account's batches of calls (GET /portal/voice/batches, the /v1 list as it is),
// newest first, each with its status, how many of its numbers have an outcome, what it has cost so
// far and when it was made; re-read every two seconds while one is still going (every five
// otherwise, so a batch an API client creates shows up too). "New campaign" opens the form.
import { cents, Loading, num, Page, unix, usePoll } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import { href } from '../../ui/router.tsx';
import { label } from './calls.tsx';
import type { Batch, BatchStatus, Counts } from './campaign-types.ts';

const OVER = new Set<BatchStatus>(['canceled', 'completed']);
/** Still placing calls, or about to. */
export const active = (b: Batch) => !OVER.has(b.status);
/** The numbers with an outcome (none left to dial for them): every row not queued nor being called. */
export const finished = (c: Counts) => c.total - c.queued - c.in_progress;

export function CampaignsPage() {
  const { list, pager } = usePaged<Batch>('/portal/voice/batches');
  usePoll(list.data?.data.some(active) ? 2000 : 5000, list.reload);
  return (
    <Page
      title="Campaigns"
      actions={
        <a class="button primary" href={href('campaigns/new')}>
          New campaign
        </a>
      }
    >
      <p class="muted">
        Lists of numbers called within calling hours, retried as asked: made here from a CSV file, or with <code>POST /v1/voice/batches</code> by any of the
        account's keys.
      </p>
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Campaigns"
          testId="campaigns"
          rows={list.data.data}
          rowKey={(b) => b.id}
          rowData={(b) => ['batch-id', b.id]}
          empty="No campaigns yet."
          columns={[
            { label: 'Campaign', cell: (b) => <a href={href(`campaigns/${b.id}`)}>{b.name || b.id}</a> },
            { label: 'Model', cell: (b) => b.model },
            { label: 'Status', cell: (b) => label(b.status) },
            { label: 'Numbers', num: true, cell: (b) => num(b.counts.total) },
            { label: 'With an outcome', num: true, cell: (b) => num(finished(b.counts)) },
            { label: 'Completed', num: true, cell: (b) => num(b.counts.completed) },
            { label: 'Cost so far', num: true, cell: (b) => cents(b.cost_cents) },
            { label: 'Created', cell: (b) => unix(b.created_at) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
