// The caller's asynchronous transcription jobs, newest first, paginated by the server.
import { Loading, Page, utc, num } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';

interface Job {
  id: string;
  status: string;
  model?: string;
  created_at?: string;
  completed_at?: string | null;
  duration_seconds?: number | null;
  error?: { message?: string } | string | null;
}

export function JobsPage() {
  const { list, pager } = usePaged<Job>('/portal/transcription/jobs');
  return (
    <Page title="Transcriptions">
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Transcription jobs"
          testId="jobs"
          rows={list.data.data}
          rowKey={(j) => j.id}
          empty="No transcription jobs yet."
          columns={[
            { label: 'Job', cell: (j) => <code>{j.id}</code> },
            { label: 'Status', cell: (j) => j.status },
            { label: 'Model', cell: (j) => j.model ?? '—' },
            { label: 'Created', cell: (j) => utc(j.created_at) },
            { label: 'Finished', cell: (j) => utc(j.completed_at) },
            { label: 'Seconds', num: true, cell: (j) => num(j.duration_seconds) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
