// The caller's asynchronous transcription jobs, newest first, paginated by the server.
import { Loading, Page, utc, num } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';

interface Job {
  id: string;
  status: string;
  model: string;
  /** Unix seconds, as /v1/audio/transcriptions/jobs has them. */
  created_at: number;
  completed_at?: number | null;
  duration?: number;
  error?: { code: string; message: string };
}

const unix = (s: number | null | undefined) => (s ? utc(new Date(s * 1000).toISOString()) : '—');

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
            { label: 'Status', cell: (j) => (j.error ? `${j.status}: ${j.error.message}` : j.status) },
            { label: 'Model', cell: (j) => j.model },
            { label: 'Created', cell: (j) => unix(j.created_at) },
            { label: 'Finished', cell: (j) => unix(j.completed_at) },
            { label: 'Audio seconds', num: true, cell: (j) => (j.duration === undefined ? '—' : num(Math.round(j.duration * 10) / 10)) },
          ]}
        />
      ) : null}
      {pager}
    </Page>
  );
}
