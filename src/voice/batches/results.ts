// A batch's results as CSV (GET /v1/voice/batches/{id}/results): one line per number, RFC 4180
// (CRLF line ends; a field holding a comma, a quote or a line break is quoted, its quotes doubled),
// safe to open in a spreadsheet: a cell starting with = + - @ (or a tab or carriage return) is
// prefixed with a single quote, as OWASP's CSV-injection advice says, so it is text, not a formula.
// Columns: index,to,status,attempts,final_call_id,end_reason,billed_seconds,cost_cents,intent,summary,
// then one per analysis field and one per variable name (each in order of first appearance).
import { centsOf } from '../kind.ts';
import type { RowDoc } from './rows.ts';
import type { CallFacts } from './views.ts';

const FIXED = ['index', 'to', 'status', 'attempts', 'final_call_id', 'end_reason', 'billed_seconds', 'cost_cents', 'intent', 'summary'];

/** One CSV cell: neutralised when a spreadsheet would read it as a formula, quoted when RFC 4180 asks. */
export function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function resultsCsv(rows: RowDoc[], calls: Map<string, CallFacts | null>): string {
  const fieldNames: string[] = [];
  const variableNames: string[] = [];
  const add = (list: string[], names: string[]) => {
    for (const n of names) if (!list.includes(n)) list.push(n);
  };
  for (const r of rows) {
    const fields = r.final_call_id ? calls.get(r.final_call_id)?.analysis?.fields : null;
    if (fields && typeof fields === 'object') add(fieldNames, Object.keys(fields));
    add(variableNames, Object.keys(r.variables));
  }
  const header = [...FIXED, ...fieldNames.map((n) => `analysis.${n}`), ...variableNames.map((n) => `variables.${n}`)];
  const lines = [header.map(csvCell).join(',')];
  for (const r of rows) {
    const call = r.final_call_id ? (calls.get(r.final_call_id) ?? null) : null;
    const last = r.attempts.at(-1);
    const fields = (call?.analysis?.fields ?? {}) as Record<string, unknown>;
    const intent = fields.intent ?? call?.outcome?.actions?.find((a) => a.intent)?.intent ?? null;
    const billed = r.attempts.reduce((s, a) => s + (a.billed_seconds ?? 0), 0);
    const cells = [
      r.index,
      r.to,
      r.status,
      r.attempts.length,
      r.final_call_id,
      last?.end_reason ?? (r.error ? r.error.code : null),
      billed,
      centsOf(r.cost_microcents ?? 0),
      intent,
      call?.analysis?.summary ?? null,
      ...fieldNames.map((n) => fields[n]),
      ...variableNames.map((n) => r.variables[n]),
    ];
    lines.push(cells.map(csvCell).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}
