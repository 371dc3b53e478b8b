// A list as a table: a caption for screen readers, one header row, one row per item, and a line
// instead of the table when there is nothing to show.
import type { ComponentChildren } from 'preact';

export interface Column<T> {
  label: string;
  /** Right-aligned figures. */
  num?: boolean;
  /** The header is for screen readers only (an actions column). */
  srOnly?: boolean;
  cell(row: T): ComponentChildren;
}

export function DataTable<T>({
  caption,
  rows,
  columns,
  rowKey,
  empty,
  testId,
  rowData,
}: {
  caption: string;
  rows: T[];
  columns: Column<T>[];
  rowKey(row: T): string | number;
  empty: string;
  testId?: string;
  /** A data-* attribute per row, for tests and links: [name, value]. */
  rowData?(row: T): [string, string | number];
}) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table data-testid={testId}>
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.label} scope="col" class={c.num ? 'num' : undefined}>
              {c.srOnly ? <span class="sr-only">{c.label}</span> : c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => {
          const data = rowData?.(r);
          return (
            <tr key={rowKey(r)} {...(data ? { [`data-${data[0]}`]: data[1] } : {})}>
              {columns.map((c) => (
                <td key={c.label} class={c.num ? 'num' : undefined}>
                  {c.srOnly ? <div class="actions">{c.cell(r)}</div> : c.cell(r)}
                </td>
              ))}
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}
