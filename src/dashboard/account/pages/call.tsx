// One voice call (GET /portal/voice/calls/{id}, the /v1 call as it is), re-read every second while it
// is going: its facts and cost; the transcript as turns, where an agent turn the callee cut off shows
// what the callee heard apart from the rest, struck through; keys pressed; the outcome (the business
// actions the agent took, with their entities, and the conversation's final state); its analysis
// (the summary and fields an llm read from the transcript, or what the pack decided, and its cost);
// the metrics.
// A call not answered yet can be cancelled, one in progress hung up (the /v1 controls, by the session).
import { Fragment } from 'preact';
import { useSession } from '../../ui/context.tsx';
import { cents, confirmed, ErrorBox, Loading, num, Page, useAction, useLoad, usePoll } from '../../ui/components.tsx';
import { DataTable } from '../../ui/table.tsx';
import { clock } from '../../ui/speech.tsx';
import { going, label, seconds, type Call, type CallTurn } from './calls.tsx';
import { CallRecording, useRecordingPlayer, type RecordingPlayer } from './call-recording.tsx';

/** Unix seconds in UTC to the second (a call's moments are seconds apart). */
const at = (s: number | null | undefined) => (s ? `${new Date(s * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—');

const ms = (n: number | null) => (n === null ? '—' : `${num(n)} ms`);

/** A description list of [term, value, test id]. */
function Facts({ rows, class: cls }: { rows: [string, string, string?][]; class: string }) {
  return (
    <dl class={cls}>
      {rows.map(([term, value, testId]) => (
        <Fragment key={term}>
          <dt>{term}</dt>
          <dd data-testid={testId}>{value}</dd>
        </Fragment>
      ))}
    </dl>
  );
}

const entities = (e: Record<string, string | number> | undefined) =>
  Object.entries(e ?? {})
    .map(([k, v]) => `${k}: ${v}`)
    .join(', ');

export function CallPage({ id }: { id: string }) {
  const { api } = useSession();
  const path = `/portal/voice/calls/${encodeURIComponent(id)}`;
  const call = useLoad(() => api.get<Call>(path), [path]);
  const c = call.data;
  // Re-read while anything on the page is still to come: the call, its recording, its analysis.
  usePoll(c !== null && (going(c) || c.recording?.status === 'recording' || c.analysis?.status === 'pending') ? 1000 : null, call.reload);
  const player = useRecordingPlayer();
  return (
    <Page title={`Call ${id}`} actions={c ? <Controls call={c} path={path} onDone={call.reload} /> : null}>
      <Loading loaded={call} />
      {c ? (
        <>
          <Facts
            class="facts card"
            rows={[
              ['Status', label(c.status), 'call-status'],
              ['End reason', label(c.end_reason)],
              ['Direction', label(c.direction ?? 'outbound'), 'call-direction'],
              ...(c.answered_by ? [['Answered by', label(c.answered_by), 'call-answered-by'] as [string, string, string?]] : []),
              ...(c.transferred_to ? [['Transferred to', c.transferred_to, 'call-transferred-to'] as [string, string, string?]] : []),
              ['To', c.to],
              ['From', c.from ?? '—'],
              ['Model', c.model],
              ['Placed', at(c.created_at)],
              ['Dialled', at(c.dial_started_at)],
              ['Ringing', at(c.ringing_at)],
              ['Answered', at(c.answered_at)],
              ['Ended', at(c.ended_at)],
              ['Duration', seconds(c.duration_seconds)],
              ['Billed', c.billed_seconds === null || c.billed_seconds === undefined ? '—' : `${num(c.billed_seconds)} s`],
              ['Cost', cents(c.cost_cents), 'call-cost'],
            ]}
          />
          <CallRecording call={c} path={path} player={player} onDeleted={call.reload} />
          <Transcript turns={c.transcript ?? []} player={c.recording?.available ? player : null} />
          <Outcome call={c} />
          {c.analysis ? <Analysis analysis={c.analysis} /> : null}
          {c.metrics ? (
            <section class="card">
              <h2>Metrics</h2>
              <Facts
                class="facts"
                rows={[
                  ['Turns', num(c.metrics.turns)],
                  ['Interruptions', num(c.metrics.interruptions)],
                  ['Turn latency, median', ms(c.metrics.turn_latency_ms.p50)],
                  ['Turn latency, 95th percentile', ms(c.metrics.turn_latency_ms.p95)],
                ]}
              />
            </section>
          ) : null}
        </>
      ) : null}
    </Page>
  );
}

/** Cancel (not answered yet) or hang up (in progress), as POST …/cancel and …/hangup do. */
function Controls({ call: c, path, onDone }: { call: Call; path: string; onDone(): void }) {
  const { api } = useSession();
  const act = useAction();
  const what = c.status === 'in_progress' ? 'hangup' : c.status === 'queued' || c.status === 'dialing' || c.status === 'ringing' ? 'cancel' : null;
  if (!what) return null;
  const run = () => {
    if (
      !confirmed(
        what === 'hangup'
          ? `Hang up the call to ${c.to}? The callee is cut off; the seconds so far are billed.`
          : `Cancel the call to ${c.to}? Nothing is billed.`,
      )
    )
      return;
    void act.run(async () => {
      await api.send('POST', `${path}/${what}`);
      onDone();
    });
  };
  return (
    <div class="actions">
      <button type="button" class="danger" onClick={run} disabled={act.busy}>
        {what === 'hangup' ? 'Hang up' : 'Cancel call'}
      </button>
      <ErrorBox error={act.error} />
    </div>
  );
}

/** The turns; with a recording, each turn's times are a button that plays the recording from it. */
function Transcript({ turns, player }: { turns: CallTurn[]; player: RecordingPlayer | null }) {
  return (
    <section class="card">
      <h2>Transcript</h2>
      {turns.some((t) => t.interrupted) ? <p class="muted">Where the callee cut the agent off, the words it did not hear are struck through.</p> : null}
      {turns.length === 0 ? (
        <p class="muted">Nothing said yet.</p>
      ) : (
        <ol class="turns" data-testid="call-turns">
          {turns.map((t, i) => (
            <li key={i} class={`call-turn ${t.role}${player?.playing === i ? ' playing' : ''}`}>
              <span class="who-said">{t.role === 'agent' ? 'Agent' : t.role === 'tool' ? 'Tool' : 'Callee'}</span>
              <span class="muted">
                {' '}
                {player ? (
                  <button type="button" class="link play-turn" data-start={t.start} data-end={t.end} onClick={() => player.play(i, t.start, t.end)}>
                    <span class="sr-only">Play </span>
                    {clock(t.start)}–{clock(t.end)}
                  </button>
                ) : (
                  `${clock(t.start)}–${clock(t.end)}`
                )}
                {t.interrupted ? ', interrupted' : ''}
              </span>
              <Said turn={t} />
              {t.intent || t.response_id || t.entities ? (
                <small class="muted">
                  {[t.intent ? `intent ${t.intent}` : '', t.response_id ? `response ${t.response_id}` : '', entities(t.entities)].filter(Boolean).join(' · ')}
                </small>
              ) : null}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

/** What was said; for an agent turn cut short, the heard part, then the rest struck through. */
function Said({ turn: t }: { turn: CallTurn }) {
  if (t.dtmf !== undefined)
    return (
      <span class="said">
        Pressed <kbd>{t.dtmf}</kbd>
      </span>
    );
  const heard = t.heard_text;
  if (t.role !== 'agent' || heard === undefined || heard === t.text) return <span class="said">{t.text}</span>;
  const rest = t.text.startsWith(heard) ? t.text.slice(heard.length) : null;
  return (
    <span class="said">
      <span class="heard" data-testid="heard">
        {heard}
      </span>
      {rest !== null ? (
        <s class="unheard" data-testid="unheard">
          <span class="sr-only"> (not heard:)</span>
          {rest}
        </s>
      ) : (
        <span class="unheard" data-testid="unheard">
          {' '}
          (said: {t.text})
        </span>
      )}
    </span>
  );
}

function Outcome({ call: c }: { call: Call }) {
  const o = c.outcome ?? { actions: [], final_state: null };
  return (
    <section class="card">
      <h2>Outcome</h2>
      <DataTable
        caption="Actions the agent took"
        testId="call-actions"
        rows={o.actions}
        rowKey={(a) => `${a.action}@${a.at}`}
        empty="The agent took no action."
        columns={[
          { label: 'Action', cell: (a) => a.action },
          { label: 'Intent', cell: (a) => a.intent ?? '—' },
          { label: 'Entities', cell: (a) => entities(a.entities) || '—' },
          { label: 'At', num: true, cell: (a) => clock(a.at) },
        ]}
      />
      <p>
        Final state: <strong>{o.final_state ?? '—'}</strong>
      </p>
    </section>
  );
}

type CallAnalysis = NonNullable<Call['analysis']>;

const ANALYSIS_STATUS: Record<string, string> = {
  pending: 'Being analysed: the summary and fields appear here once the model has read the transcript.',
  skipped: 'Not analysed: there was no conversation to read (the call was not answered, or the callee said nothing). Nothing was billed for it.',
};

/** Cents to the micro-cent, as billed: a chat call of a few hundred tokens costs a fraction of a cent that `cents` would show as $0.00. */
const exactCents = (c: number) => `$${(c / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 8 })}`;

/** A field's value as the API gives it: null is a field the conversation did not settle. */
const value = (v: CallAnalysis['fields'][string]) => (v === null ? '— (not settled)' : typeof v === 'boolean' ? (v ? 'yes' : 'no') : String(v));

/** The call's analysis: pending, skipped, failed (why), or completed: the summary, the fields, the pack's own, and its cost. */
function Analysis({ analysis: a }: { analysis: CallAnalysis }) {
  const fields = Object.entries(a.fields);
  const done = a.status === 'completed';
  return (
    <section class="card" data-testid="call-analysis">
      <h2>Analysis</h2>
      <p data-testid="analysis-status">
        {a.status === 'failed' && a.error
          ? `The analysis failed after ${a.attempts} attempt${a.attempts === 1 ? '' : 's'}: ${a.error.message} (${a.error.code}). It was not billed; the call's own bill is unchanged.`
          : (ANALYSIS_STATUS[a.status] ?? `Analysed ${a.source === 'pack' ? "from the intent pack's outcome (free)" : `by ${a.model}`}.`)}
      </p>
      {done && a.summary !== null ? <p data-testid="analysis-summary">{a.summary}</p> : null}
      {done && fields.length > 0 ? (
        <DataTable
          caption="Fields read from the conversation"
          testId="analysis-fields"
          rows={fields}
          rowKey={([name]) => name}
          empty=""
          columns={[
            { label: 'Field', cell: ([name]) => name },
            { label: 'Value', cell: ([, v]) => value(v) },
          ]}
        />
      ) : null}
      {done ? (
        <Facts
          class="facts"
          rows={[
            ...(a.intent ? [['Intent', a.intent] as [string, string]] : []),
            ...(a.actions ? [['Actions', a.actions.join(', ') || '—'] as [string, string]] : []),
            ...(a.entities ? [['Entities', entities(a.entities) || '—'] as [string, string]] : []),
            ...(a.usage ? [['Tokens', `${num(a.usage.prompt_tokens)} in, ${num(a.usage.completion_tokens)} out`] as [string, string]] : []),
            ['Cost', exactCents(a.cost_cents), 'analysis-cost'],
          ]}
        />
      ) : null}
    </section>
  );
}
