// Usage and spend over UTC days (the API's days: the date inputs are plain dates, never shifted by
// the browser's time zone), grouped by day, model, key prefix, member or end user. The totals shown
// are the API's own for the same range; the chart is plain SVG. Range, grouping and metric live in
// the URL. Below, the request log (usage records), paginated by the server.
import { useSession } from '../../ui/context.tsx';
import { cents, Field, formValue, Loading, Page, useLoad, num, utc } from '../../ui/components.tsx';
import { BarChart, type Point } from '../../ui/chart.tsx';
import { USAGE_GROUPS } from '../../ui/constants.ts';
import { useRoute } from '../../ui/router.tsx';
import { usePaged } from '../../ui/paged.tsx';
import { DataTable } from '../../ui/table.tsx';
import type { UsageGroupRow, UsageRow } from '../../../billing/usage-views.ts';

interface Summary {
  scope: 'account' | 'member';
  from: string;
  to: string;
  group_by: string;
  data: UsageGroupRow[];
  totals: UsageRow;
}

const GROUP_LABEL: Record<string, string> = { day: 'Day (UTC)', model: 'Model', key_prefix: 'Key prefix', member: 'Member', end_user: 'End user' };
const METRICS = { cost: 'Spend', requests: 'Requests', tokens: 'Tokens' } as const;
type Metric = keyof typeof METRICS;
const DAY_MS = 86_400_000;

const rowLabel = (r: UsageGroupRow): string =>
  r.day ?? r.model ?? r.key_prefix ?? (r.user_id !== undefined ? `user ${r.user_id}` : undefined) ?? r.end_user ?? '(none)';
const value = (m: UsageRow, metric: Metric) => (metric === 'cost' ? m.cost_cents : metric === 'requests' ? m.requests : m.total_tokens);
const fmt = (metric: Metric) => (v: number) => (metric === 'cost' ? cents(v) : num(Math.round(v)));

/** Every UTC day from..to with its value (0 where the API has no row): a chart with no holes. */
function daily(from: string, to: string, rows: UsageGroupRow[], metric: Metric): Point[] {
  const byDay = new Map(rows.map((r) => [r.day!, value(r, metric)]));
  const out: Point[] = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) {
    const day = new Date(t).toISOString().slice(0, 10);
    out.push({ label: day, value: byDay.get(day) ?? 0 });
  }
  return out;
}

export function UsagePage() {
  const { api } = useSession();
  const route = useRoute();
  const from = route.query.get('from') ?? '';
  const to = route.query.get('to') ?? '';
  const groupBy = route.query.get('group_by') ?? 'day';
  const metric = (route.query.get('metric') ?? 'cost') as Metric;
  const usage = useLoad(() => api.get<Summary>('/portal/usage', { from, to, group_by: groupBy }), [from, to, groupBy]);
  const s = usage.data;
  const points = s ? (s.group_by === 'day' ? daily(s.from, s.to, s.data, metric) : s.data.map((r) => ({ label: rowLabel(r), value: value(r, metric) }))) : [];

  return (
    <Page title="Usage">
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          route.setQuery({ from: formValue(e, 'from'), to: formValue(e, 'to'), group_by: formValue(e, 'group_by'), metric: formValue(e, 'metric') });
        }}
      >
        <Field label="From (UTC day)">
          <input name="from" type="date" defaultValue={from || s?.from} key={`f${from}${s?.from}`} />
        </Field>
        <Field label="To (UTC day)">
          <input name="to" type="date" defaultValue={to || s?.to} key={`t${to}${s?.to}`} />
        </Field>
        <Field label="Group by">
          <select name="group_by" defaultValue={groupBy} key={groupBy}>
            {USAGE_GROUPS.map((g) => (
              <option key={g} value={g}>
                {GROUP_LABEL[g]}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Chart">
          <select name="metric" defaultValue={metric} key={metric}>
            {Object.entries(METRICS).map(([k, label]) => (
              <option key={k} value={k}>
                {label}
              </option>
            ))}
          </select>
        </Field>
        <button type="submit">Show</button>
      </form>
      <Loading loaded={usage} />
      {s ? (
        <>
          <p class="muted">
            {s.from} to {s.to} (UTC, inclusive){s.scope === 'member' ? ' · your own usage in the organization' : ''}
          </p>
          <BarChart points={points} title={`${METRICS[metric]} by ${GROUP_LABEL[s.group_by]?.toLowerCase()}`} format={fmt(metric)} />
          <table data-testid="usage-table">
            <caption class="sr-only">Usage by {GROUP_LABEL[s.group_by]}</caption>
            <thead>
              <tr>
                <th scope="col">{GROUP_LABEL[s.group_by]}</th>
                <th scope="col" class="num">
                  Requests
                </th>
                <th scope="col" class="num">
                  Errors
                </th>
                <th scope="col" class="num">
                  Tokens
                </th>
                <th scope="col" class="num">
                  Audio seconds
                </th>
                <th scope="col" class="num">
                  Spend
                </th>
              </tr>
            </thead>
            <tbody>
              {s.data.map((r) => (
                <tr key={rowLabel(r)}>
                  <th scope="row">{rowLabel(r)}</th>
                  <MetricCells m={r} />
                </tr>
              ))}
            </tbody>
            <tfoot>
              <tr data-testid="usage-totals">
                <th scope="row">Total</th>
                <MetricCells m={s.totals} />
              </tr>
            </tfoot>
          </table>
        </>
      ) : null}
      {s ? <RecentRequests from={s.from} to={s.to} /> : null}
    </Page>
  );
}

interface UsageRecord {
  id: string;
  created_at: string;
  request_id: string;
  key_prefix: string;
  model: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  seconds: number | null;
  cost_cents: number;
  status: string;
  latency_ms: number;
  end_user: string | null;
}

/**
 * The request log of the range the totals cover (the summary's own from/to, defaults included):
 * each metered call, newest first, paginated by the server (its cursor: ?records_after=).
 */
function RecentRequests({ from, to }: { from: string; to: string }) {
  const { list, pager } = usePaged<UsageRecord>('/portal/usage/records', { from, to }, 'records_after');
  return (
    <>
      <h2>Requests</h2>
      <Loading loaded={list} />
      {list.data ? (
        <DataTable
          caption="Requests of the range, newest first"
          testId="usage-records"
          rows={list.data.data}
          rowKey={(r) => r.id}
          empty="No requests in this range."
          columns={[
            { label: 'Time', cell: (r) => utc(r.created_at) },
            { label: 'Model', cell: (r) => r.model },
            { label: 'Key', cell: (r) => <code>{r.key_prefix}</code> },
            { label: 'End user', cell: (r) => r.end_user ?? '—' },
            { label: 'Status', cell: (r) => r.status },
            {
              label: 'Tokens in / out',
              num: true,
              cell: (r) => (r.prompt_tokens === null ? (r.seconds === null ? '—' : `${r.seconds} s`) : `${num(r.prompt_tokens)} / ${num(r.completion_tokens)}`),
            },
            { label: 'Latency', num: true, cell: (r) => `${r.latency_ms} ms` },
            { label: 'Cost', num: true, cell: (r) => cents(r.cost_cents) },
            { label: 'Request id', cell: (r) => <code>{r.request_id}</code> },
          ]}
        />
      ) : null}
      {pager}
    </>
  );
}

function MetricCells({ m }: { m: UsageRow }) {
  return (
    <>
      <td class="num" data-metric="requests">
        {num(m.requests)}
      </td>
      <td class="num" data-metric="errors">
        {num(m.errors)}
      </td>
      <td class="num" data-metric="tokens">
        {num(m.total_tokens)}
      </td>
      <td class="num" data-metric="seconds">
        {num(Math.round(m.seconds * 10) / 10)}
      </td>
      <td class="num" data-metric="cost" data-microcents={m.cost_microcents}>
        {cents(m.cost_cents)}
      </td>
    </>
  );
}
