// A campaign's list of numbers from a CSV file, read in the browser before anything is sent: the
// header row names the columns; `to` (or `phone`, or `number`) is the number to call, a column named
// `metadata.<key>` is returned on the call as metadata, every other column is a variable the agent's
// wordings fill in (`{{name}}`). Each row is checked as the API will check it, so the page shows the
// rows it will not send and why: a number must be in international form (+, the country code, the
// number; spaces, dashes, dots and brackets are dropped), the API checks it further against the
// country's numbering plan and reports a number it refuses per row. A file that cannot be read as
// such a list (no header, no number column, a bad column name, too many rows) is one error.
import { CsvError, CsvTooLong, parseCsv, type CsvRecord } from '../../ui/csv.ts';

/** The API's limits (POST /v1/voice/batches, and a call's variables and metadata). */
export const MAX_ROWS = 10_000;
const MAX_VARIABLES = 50;
const MAX_METADATA = 16;
const MAX_VALUE = 500;
const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const NUMBER_COLUMNS = ['to', 'phone', 'number'];
const METADATA_PREFIX = 'metadata.';

/** A number's entry in a batch's `calls`. */
export interface BatchCall {
  to: string;
  variables?: Record<string, string>;
  metadata?: Record<string, string>;
}

/** One data row of the file: the call it makes, or why it makes none. */
export interface ListRow {
  line: number;
  to: string;
  call: BatchCall | null;
  error: string | null;
}

export interface CallList {
  /** The header's number column, and the variable and metadata names the other columns give. */
  numberColumn: string;
  variables: string[];
  metadata: string[];
  rows: ListRow[];
  /** The calls of the valid rows, in the file's order: what is sent. */
  calls: BatchCall[];
}

export { CsvError };

/** `+91 98000-00040` → `+919800000040`; null when it is not a number in international form. */
export function normalizeNumber(raw: string): string | null {
  const n = raw.trim().replace(/[\s().-]/g, '');
  return /^\+[1-9]\d{6,14}$/.test(n) ? n : null;
}

export function callsFromCsv(text: string): CallList {
  // The API's free text refuses NUL (src/shared/strings.ts); a file read as UTF-8 has no unpaired
  // surrogate (the decoder writes U+FFFD), so no cell needs checking for the rest of that rule.
  if (text.includes('\u0000')) throw new CsvError('This is not a text file: save the sheet as CSV (comma-separated values) and pick that file.');
  const tooMany = `The file has more than ${MAX_ROWS.toLocaleString('en-US')} rows; a campaign takes at most ${MAX_ROWS.toLocaleString('en-US')}.`;
  let records: CsvRecord[];
  try {
    records = parseCsv(text, MAX_ROWS + 1); // the header and the rows
  } catch (e) {
    throw e instanceof CsvTooLong ? new CsvError(tooMany) : e;
  }
  const [head, ...data] = records;
  if (!head) throw new CsvError('The file is empty.');
  const names = head.fields.map((f) => f.trim());
  const lower = names.map((n) => n.toLowerCase());
  const numberColumn = NUMBER_COLUMNS.find((c) => lower.includes(c));
  if (numberColumn === undefined) {
    const looksLikeData = names.some((n) => normalizeNumber(n) !== null);
    throw new CsvError(
      looksLikeData
        ? 'The first line must be a header naming the columns (to, then any variables); this one holds a number.'
        : `No number column: the header must name one "to" (or "phone", or "number"); it names ${names.map((n) => `"${n}"`).join(', ')}.`,
    );
  }
  const toIndex = lower.indexOf(numberColumn);
  const variables: [number, string][] = [];
  const metadata: [number, string][] = [];
  const seen = new Set<string>();
  names.forEach((name, i) => {
    if (i === toIndex) return;
    if (name === '') {
      if (data.some((r) => (r.fields[i] ?? '') !== '')) throw new CsvError(`Column ${i + 1} has values but no name in the header.`);
      return;
    }
    const isMeta = name.toLowerCase().startsWith(METADATA_PREFIX);
    const key = isMeta ? name.slice(METADATA_PREFIX.length) : name;
    if (!NAME.test(key)) throw new CsvError(`Column "${name}": a ${isMeta ? 'metadata key' : 'variable name'} is 1 to 64 letters, digits, "_", "." or "-".`);
    const id = `${isMeta ? 'm' : 'v'}:${key}`;
    if (seen.has(id)) throw new CsvError(`Column "${name}" appears twice in the header.`);
    seen.add(id);
    (isMeta ? metadata : variables).push([i, key]);
  });
  if (variables.length > MAX_VARIABLES) throw new CsvError(`The file has ${variables.length} variable columns; a call takes at most ${MAX_VARIABLES}.`);
  if (metadata.length > MAX_METADATA) throw new CsvError(`The file has ${metadata.length} metadata columns; a call takes at most ${MAX_METADATA}.`);
  if (data.length === 0) throw new CsvError('The file has a header but no rows.');

  const rows = data.map(({ line, fields }): ListRow => {
    const raw = (fields[toIndex] ?? '').trim();
    const fail = (error: string): ListRow => ({ line, to: raw, call: null, error });
    if (fields.length > names.length) return fail(`${fields.length} cells where the header names ${names.length}.`);
    if (raw === '') return fail('No number.');
    const to = normalizeNumber(raw);
    if (to === null) return fail('Not a number in international form (+, the country code, the number).');
    const pick = (cols: [number, string][], what: string): Record<string, string> | string => {
      const out: Record<string, string> = {};
      for (const [i, key] of cols) {
        const v = fields[i] ?? '';
        if (v.length > MAX_VALUE) return `The ${what} "${key}" is longer than ${MAX_VALUE} characters.`;
        out[key] = v;
      }
      return out;
    };
    const vars = pick(variables, 'variable');
    if (typeof vars === 'string') return fail(vars);
    const meta = pick(metadata, 'metadata');
    if (typeof meta === 'string') return fail(meta);
    const call: BatchCall = { to };
    if (variables.length > 0) call.variables = vars;
    if (metadata.length > 0) call.metadata = meta;
    return { line, to, call, error: null };
  });
  return {
    numberColumn: names[toIndex]!,
    variables: variables.map(([, k]) => k),
    metadata: metadata.map(([, k]) => k),
    rows,
    calls: rows.flatMap((r) => (r.call ? [r.call] : [])),
  };
}
