// The caller's asynchronous transcription jobs, newest first, paginated by the server.
import { Loading, Page, utc, num } from '../../ui/components.tsx';
import { usePaged } from '../../ui/paged.tsx';

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
        list.data.data.length === 0 ? (
          <p class="muted">No transcription jobs yet.</p>
        ) : (
          <table data-testid="jobs">
            <caption class="sr-only">Transcription jobs</caption>
            <thead>
              <tr>
                <th scope="col">Job</th>
                <th scope="col">Status</th>
                <th scope="col">Model</th>
                <th scope="col">Created</th>
                <th scope="col">Finished</th>
                <th scope="col" class="num">Seconds</th>
              </tr>
            </thead>
            <tbody>
              {list.data.data.map((j) => (
                <tr key={j.id}>
                  <td>
                    <code>{j.id}</code>
                  </td>
                  <td>{j.status}</td>
                  <td>{j.model ?? '—'}</td>
                  <td>{utc(j.created_at)}</td>
                  <td>{utc(j.completed_at)}</td>
                  <td class="num">{num(j.duration_seconds)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : null}
      {pager}
    </Page>
  );
}
