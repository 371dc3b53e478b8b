// A CSV reader for files people export from spreadsheets (RFC 4180 and what Excel and Google Sheets
// write): comma-separated fields, a field in double quotes may hold commas, line breaks and doubled
// quotes (""), lines end in CRLF, LF or CR, a UTF-8 byte order mark at the start is dropped, empty
// lines are skipped. A quote inside an unquoted field is kept as written (5" screen); one that opens
// a field and is never closed, or text right after a closing quote, is an error naming the line.
// Small and dependency-free, so the dashboard bundle gains no library for it.

export class CsvError extends Error {}

/** More records than the caller takes: thrown as soon as the one too many is read. */
export class CsvTooLong extends CsvError {}

/** One record and the line of the file it starts on (1-based), for messages that point at it. */
export interface CsvRecord {
  line: number;
  fields: string[];
}

/** Every record of `text`; more than `maxRecords` is an error (so a huge file stops early). */
export function parseCsv(text: string, maxRecords = Number.POSITIVE_INFINITY): CsvRecord[] {
  const s = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const out: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  let line = 1;
  let start = 1; // the line the current record started on
  let quoted = false; // inside a quoted field
  let closed = false; // a quoted field's closing quote was just read
  let i = 0;
  const endField = () => {
    fields.push(field);
    field = '';
    closed = false;
  };
  const endRecord = () => {
    endField();
    // A line with nothing on it is no record (a blank line, the file's last line break).
    if (!(fields.length === 1 && fields[0] === '')) {
      if (out.length >= maxRecords) throw new CsvTooLong(`The file has more than ${maxRecords.toLocaleString('en-US')} records.`);
      out.push({ line: start, fields });
    }
    fields = [];
  };
  while (i < s.length) {
    const c = s[i]!;
    if (quoted) {
      if (c === '"') {
        if (s[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        quoted = false;
        closed = true;
      } else {
        if (c === '\n' || (c === '\r' && s[i + 1] !== '\n')) line++;
        field += c;
      }
      i++;
      continue;
    }
    if (c === ',') endField();
    else if (c === '\r' || c === '\n') {
      endRecord();
      if (c === '\r' && s[i + 1] === '\n') i++;
      line++;
      start = line;
    } else if (closed) throw new CsvError(`Line ${line}: text after a closing quote; a quote inside a quoted field is written twice ("").`);
    else if (c === '"' && field === '') quoted = true;
    else field += c;
    i++;
  }
  if (quoted) throw new CsvError(`Line ${start}: a quoted field is never closed.`);
  endRecord();
  return out;
}
