// Campaigns: the account's batches of calls (GET /portal/voice/batches, the /v1 list as it is),
// newest first, each with its status, how many of its numbers have an outcome, what it has cost so
// far and when it was made; re-read every two seconds while one is still going (every five
// otherwise, so a batch an API client creates shows up too). "New campaign" opens the form.
import { cents, Loading, num, Page, unix, usePoll } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import { href } from '../../ui/router.tsx';
import type { BATCH_STATUSES, ROW_STATUSES } from '../../ui/constants.ts';
import { label } from './calls.tsx';

export type BatchStatus = (typeof BATCH_STATUSES)[number];
export type RowStatus = (typeof ROW_STATUSES)[number];
export type Counts = Record<'total' | RowStatus, number>;

/** The calling window: an IANA time zone, the days, and the hours ("HH:MM") calls may be placed in. */
export interface CallWindow {
  time_zone: string;
  days: string[];
  start: string;
  end: string;
}

/** A batch as /portal/voice/batches answers it (the /v1 voice.batch object; docs/api/voice-batches.md). */
export interface Batch {
  id: string;
  name: string | null;
  model: string;
  status: BatchStatus;
  paused_reason: 'api' | 'insufficient_credit' | null;
  created_at: number;
  start_at: number | null;
  started_at: number | null;
  ended_at: number | null;
  next_window_at?: number | null;
  window: CallWindow;
  max_concurrent: number;
  retry: { on: string[]; max_attempts: number; min_gap_seconds: number };
  counts: Counts;
  rejected: { index: number; to: string; error: { code: string; message: string } }[];
  cost_cents: number;
  calls?: { data: BatchRow[]; has_more: boolean; first_id?: number | string | null; last_id?: number | string | null };
}

export interface Attempt {
  call_id: string;
  status: string;
  end_reason: string | null;
  started_at: number | null;
  ended_at: number | null;
  billed_seconds: number | null;
  cost_cents: number | null;
}

/** One number of a batch, with every attempt made to call it. */
export interface BatchRow {
  index: number;
  to: string;
  variables?: Record<string, string>;
  status: RowStatus;
  attempts: Attempt[];
  next_attempt_at: number | null;
  final_call_id: string | null;
}

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
