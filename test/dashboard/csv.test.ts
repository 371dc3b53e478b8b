// The dashboard's CSV reader (src/dashboard/ui/csv.ts) and the campaign list it makes
// (src/dashboard/account/pages/campaign-csv.ts), in Node: the bytes spreadsheets write, and the rows
// a person must be told about before anything is sent.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CsvError, parseCsv } from '../../src/dashboard/ui/csv.ts';
import { callsFromCsv, MAX_ROWS, normalizeNumber } from '../../src/dashboard/account/pages/campaign-csv.ts';

const fields = (text: string) => parseCsv(text).map((r) => r.fields);

describe('parseCsv', () => {
  it('reads plain fields, CRLF, LF and CR line ends, and skips blank lines', () => {
    assert.deepEqual(fields('a,b,c\r\n1,2,3\n4,5,6\r7,8,9\r\n\r\n'), [
      ['a', 'b', 'c'],
      ['1', '2', '3'],
      ['4', '5', '6'],
      ['7', '8', '9'],
    ]);
    assert.deepEqual(fields('a,b'), [['a', 'b']], 'no final line break');
    assert.deepEqual(fields('a,,c,\n'), [['a', '', 'c', '']], 'empty fields kept');
  });

  it('reads quoted fields with commas, line breaks and doubled quotes, and says on which line a record starts', () => {
    const records = parseCsv('to,note\r\n+919800000001,"Mr. ""K"", Pune"\r\n+919800000002,"two\r\nlines\nhere"\r\n+919800000003,""\r\n');
    assert.deepEqual(
      records.map((r) => [r.line, ...r.fields]),
      [
        [1, 'to', 'note'],
        [2, '+919800000001', 'Mr. "K", Pune'],
        [3, '+919800000002', 'two\r\nlines\nhere'],
        [6, '+919800000003', ''],
      ],
    );
  });

  it('drops a UTF-8 byte order mark and keeps non-ASCII text', () => {
    assert.deepEqual(fields('\uFEFFto,name\n+919800000001,Ānanya नमस्ते\n'), [
      ['to', 'name'],
      ['+919800000001', 'Ānanya नमस्ते'],
    ]);
  });

  it('keeps a quote inside an unquoted field as written', () => {
    assert.deepEqual(fields('a,5" screen\n'), [['a', '5" screen']]);
  });

  it('refuses a quoted field never closed, and text after a closing quote, naming the line', () => {
    assert.throws(
      () => parseCsv('to\n+91\n"+9198,\nx\n'),
      (e: unknown) => e instanceof CsvError && /^Line 3: a quoted field is never closed/.test(e.message),
    );
    assert.throws(
      () => parseCsv('to,b\n1,"x"y\n'),
      (e: unknown) => e instanceof CsvError && /^Line 2: text after a closing quote/.test(e.message),
    );
  });

  it('stops at the record past its limit', () => {
    assert.equal(parseCsv('a\nb\nc\n', 3).length, 3);
    assert.throws(() => parseCsv('a\nb\nc\nd\n', 3), CsvError);
  });
});

describe('callsFromCsv', () => {
  it('takes "to", "phone" or "number" as the number; other columns are variables, "metadata." columns metadata', () => {
    const list = callsFromCsv('\uFEFFPhone,name,amount,metadata.crm_id\r\n+91 98000-00001,"Rao, A.",2000,C-1\r\n(+91) 9800000002,B,,C-2\r\n');
    assert.equal(list.numberColumn, 'Phone');
    assert.deepEqual([list.variables, list.metadata], [['name', 'amount'], ['crm_id']]);
    assert.deepEqual(list.calls, [
      { to: '+919800000001', variables: { name: 'Rao, A.', amount: '2000' }, metadata: { crm_id: 'C-1' } },
      { to: '+919800000002', variables: { name: 'B', amount: '' }, metadata: { crm_id: 'C-2' } },
    ]);
    assert.deepEqual(callsFromCsv('number\n+14155550100\n').calls, [{ to: '+14155550100' }], 'no variables, no metadata: none sent');
  });

  it('shows each invalid row with why, and sends only the valid ones', () => {
    const list = callsFromCsv(`to,name\n+919800000001,A\n,B\n98000 00002,C\n+919800000003,D,extra\n+919800000004,${'x'.repeat(501)}\n+919800000005,E\n`);
    assert.deepEqual(
      list.rows.map((r) => [r.line, r.to, r.error]),
      [
        [2, '+919800000001', null],
        [3, '', 'No number.'],
        [4, '98000 00002', 'Not a number in international form (+, the country code, the number).'],
        [5, '+919800000003', '3 cells where the header names 2.'],
        [6, '+919800000004', 'The variable "name" is longer than 500 characters.'],
        [7, '+919800000005', null],
      ],
    );
    assert.deepEqual(
      list.calls.map((c) => c.to),
      ['+919800000001', '+919800000005'],
    );
  });

  it('refuses a file that is not such a list, saying why', () => {
    const refuses = (text: string, message: RegExp) =>
      assert.throws(
        () => callsFromCsv(text),
        (e: unknown) => e instanceof CsvError && message.test(e.message),
      );
    refuses('', /^The file is empty\.$/);
    refuses('\r\n\r\n', /^The file is empty\.$/);
    refuses('+919800000001,A\n+919800000002,B\n', /must be a header .* this one holds a number/);
    refuses('mobile,name\n+919800000001,A\n', /^No number column: .* it names "mobile", "name"\.$/);
    refuses('to,name\n', /header but no rows/);
    refuses('to,first name\n+919800000001,A\n', /^Column "first name": a variable name is 1 to 64/);
    refuses('to,metadata.\n+919800000001,A\n', /^Column "metadata\.": a metadata key/);
    refuses('to,a,a\n+919800000001,A,B\n', /^Column "a" appears twice/);
    refuses('to,,b\n+919800000001,A,B\n', /^Column 2 has values but no name/);
    refuses(`to,${Array.from({ length: 51 }, (_, i) => `v${i}`).join(',')}\n+919800000001\n`, /51 variable columns; a call takes at most 50/);
    refuses('PK\u0003\u0004\u0000\u0000binary', /not a text file/);
    refuses('to,a\n"+919800000001,A\n', /^Line 2: a quoted field is never closed/);
    refuses(`to\n${'+919800000001\n'.repeat(MAX_ROWS + 1)}`, /more than 10,000 rows/);
  });

  it('takes 10,000 rows, an empty unnamed column (a spreadsheet\'s trailing comma), and a "to" column anywhere', () => {
    const list = callsFromCsv(`name,to,\n${Array.from({ length: MAX_ROWS }, (_, i) => `n${i},+9198${String(i).padStart(8, '0')},`).join('\n')}`);
    assert.equal(list.calls.length, MAX_ROWS);
    assert.deepEqual(list.calls[9999], { to: '+919800009999', variables: { name: 'n9999' } });
  });

  it('normalizes a number written with spaces, dashes, dots and brackets, and refuses one without its country code', () => {
    assert.equal(normalizeNumber(' +1 (415) 555.0100 '), '+14155550100');
    assert.equal(normalizeNumber('09800000001'), null);
    assert.equal(normalizeNumber('+0123456789'), null);
    assert.equal(normalizeNumber('+91abc'), null);
  });
});
