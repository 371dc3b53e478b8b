// One campaign (GET /portal/voice/batches/{id}, the /v1 batch as it is, its numbers paged by the
// API's cursor and filtered by status, both in the URL), re-read every second while it runs: counts
// by status and a progress bar; pause, resume and cancel (after a confirmation) as the API allows
// them; why it is paused (a wallet that cannot pay links to the wallet page) or waiting; each
// number with its attempts, each attempt's call opening the call's page; the numbers refused at
// creation; the results as CSV (GET …/results, the API's file as it is).
import { useSession } from '../../ui/context.tsx';
import { cents, confirmed, ErrorBox, Loading, num, Page, Pager, unix, useAction, useLoad, usePoll } from '../../ui/components.tsx';
import { DataTable } from '../../ui/table.tsx';
import { href, useRoute } from '../../ui/router.tsx';
import { ROW_STATUSES } from '../../ui/constants.ts';
import { label, StatusFilter } from './calls.tsx';
import { active, finished } from './campaigns.tsx';
import type { Batch, BatchRow } from './campaign-types.ts';

const PAGE = 20;

export function CampaignPage({ id }: { id: string }) {
  const { api } = useSession();
  const route = useRoute();
  const after = route.query.get('after') ?? '';
  const status = route.query.get('status') ?? '';
  const path = `/portal/voice/batches/${encodeURIComponent(id)}`;
  const batch = useLoad(() => api.get<Batch>(path, { limit: PAGE, after, status }), [path, after, status]);
  const b = batch.data;
  usePoll(b ? (active(b) ? 1000 : null) : null, batch.reload);
  return (
    <Page title={`Campaign ${b?.name || id}`} actions={b ? <Controls batch={b} path={path} onDone={batch.reload} /> : null}>
      <p>
        <a href={href('campaigns')}>All campaigns</a>
      </p>
      <Loading loaded={batch} />
      {b ? (
        <>
          <Progress batch={b} />
          <State batch={b} />
          <Download path={path} id={b.id} />
          <section class="card">
            <h2>Numbers</h2>
            <StatusFilter statuses={ROW_STATUSES} />
            <Rows rows={b.calls?.data ?? []} />
            <Pager
              hasMore={b.calls?.has_more === true}
              atFirst={!after}
              onFirst={() => route.setQuery({ after: null })}
              onNext={() => route.setQuery({ after: String(b.calls?.last_id ?? '') })}
            />
          </section>
          {b.rejected.length > 0 ? (
            <section class="card">
              <h2>Refused at creation</h2>
              <DataTable
                caption="Numbers refused at creation"
                testId="campaign-rejected"
                rows={b.rejected}
                rowKey={(r) => r.index}
                empty=""
                columns={[
                  { label: 'Row', num: true, cell: (r) => r.index },
                  { label: 'Number', cell: (r) => r.to },
                  { label: 'Why', cell: (r) => `${r.error.message} (${r.error.code})` },
                ]}
              />
            </section>
          ) : null}
        </>
      ) : null}
    </Page>
  );
}

function Progress({ batch: b }: { batch: Batch }) {
  const c = b.counts;
  const done = finished(c);
  return (
    <section class="card">
      <p>
        Status: <strong data-testid="campaign-status">{label(b.status)}</strong> · cost so far{' '}
        <strong data-testid="campaign-cost">{cents(b.cost_cents)}</strong> · {b.model} · created {unix(b.created_at)}
        {b.ended_at ? ` · ended ${unix(b.ended_at)}` : ''}
      </p>
      <label class="progress">
        <span data-testid="campaign-progress">
          {num(done)} of {num(c.total)} numbers have an outcome
        </span>
        <progress max={Math.max(c.total, 1)} value={done} />
      </label>
      <dl class="counts" data-testid="campaign-counts">
        {(['total', ...ROW_STATUSES] as const).map((s) => (
          <div key={s}>
            <dt>{label(s)}</dt>
            <dd data-count={s}>{num(c[s])}</dd>
          </div>
        ))}
      </dl>
    </section>
  );
}

/** Why the campaign is not calling right now, when it is not. */
function State({ batch: b }: { batch: Batch }) {
  if (b.status === 'paused' && b.paused_reason === 'insufficient_credit')
    return (
      <div class="notice" role="status" data-testid="campaign-paused">
        Paused: the wallet cannot pay for the next call. <a href={href('wallet')}>Top up the wallet</a>; the campaign resumes on its own once it can.
      </div>
    );
  if (b.status === 'paused')
    return (
      <div class="notice" role="status" data-testid="campaign-paused">
        Paused from here or the API; calls in progress finish. Resume to go on.
      </div>
    );
  if (b.status === 'waiting_window')
    return (
      <div class="notice" role="status">
        Outside the calling hours ({b.window.start}–{b.window.end} {b.window.time_zone}, {b.window.days.join(', ')}); the next window opens{' '}
        {unix(b.next_window_at)}.
      </div>
    );
  if (b.status === 'scheduled')
    return (
      <div class="notice" role="status">
        Starts {unix(b.start_at)}.
      </div>
    );
  if (b.status === 'cancelling')
    return (
      <div class="notice" role="status">
        Cancelled: no new call is placed; the calls in progress finish.
      </div>
    );
  return null;
}

function Controls({ batch: b, path, onDone }: { batch: Batch; path: string; onDone(): void }) {
  const { api } = useSession();
  const act = useAction();
  const send = (what: 'pause' | 'resume' | 'cancel') =>
    void act.run(async () => {
      await api.send('POST', `${path}/${what}`);
      onDone();
    });
  const cancel = () => {
    if (confirmed(`Cancel this campaign? The ${num(b.counts.queued)} numbers not yet called are not called; the calls in progress finish.`)) send('cancel');
  };
  const canPause = b.status === 'running' || b.status === 'waiting_window' || b.status === 'scheduled';
  if (!canPause && b.status !== 'paused') return null;
  return (
    <div class="actions">
      {b.status === 'paused' ? (
        <button type="button" onClick={() => send('resume')} disabled={act.busy}>
          Resume
        </button>
      ) : (
        <button type="button" onClick={() => send('pause')} disabled={act.busy}>
          Pause
        </button>
      )}
      <button type="button" class="danger" onClick={cancel} disabled={act.busy}>
        Cancel campaign
      </button>
      <ErrorBox error={act.error} />
    </div>
  );
}

/** The results file through the session (the answer's refusal shown as the others'), saved as campaign-<id>.csv. */
function Download({ path, id }: { path: string; id: string }) {
  const { api } = useSession();
  const act = useAction();
  const download = () =>
    act.run(async () => {
      const blob = await (await api.raw('GET', `${path}/results`)).blob();
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = `campaign-${id}.csv`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    });
  return (
    <p>
      <button type="button" onClick={() => void download()} disabled={act.busy}>
        Download results (CSV)
      </button>
      <ErrorBox error={act.error} />
    </p>
  );
}

function Rows({ rows }: { rows: BatchRow[] }) {
  return (
    <DataTable
      caption="The campaign's numbers"
      testId="campaign-rows"
      rows={rows}
      rowKey={(r) => r.index}
      rowData={(r) => ['row', r.index]}
      empty="No number has this status."
      columns={[
        { label: 'Row', num: true, cell: (r) => r.index },
        { label: 'Number', cell: (r) => r.to },
        { label: 'Status', cell: (r) => label(r.status) },
        {
          label: 'Attempts',
          cell: (r) =>
            r.attempts.length === 0 ? (
              '—'
            ) : (
              <ol>
                {r.attempts.map((a, i) => (
                  <li key={i}>
                    {a.call_id ? <a href={href(`calls/${a.call_id}`)}>{a.call_id}</a> : 'placing'} {label(a.status)}
                    {a.end_reason ? `, ${label(a.end_reason)}` : ''}
                    {a.billed_seconds ? `, ${num(a.billed_seconds)} s` : ''}
                    {a.cost_cents !== null ? `, ${cents(a.cost_cents)}` : ''}
                  </li>
                ))}
              </ol>
            ),
        },
        { label: 'Next attempt', cell: (r) => unix(r.next_attempt_at) },
      ]}
    />
  );
}
