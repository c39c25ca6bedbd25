/**
 * Renders rows as a text table: a header line, then one line per row, columns separated by two
 * spaces. Columns holding only numbers, and those listed in `rightAligned`, are right-aligned.
 *
 * @example
 * renderTable(['QUEUE', 'PENDING'], [['email', 3]]); // 'QUEUE  PENDING\nemail        3'
 */
export function renderTable(
  headers: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<string | number>>,
  rightAligned: readonly number[] = [],
): string {
  const cells = rows.map((row) => row.map((cell) => String(cell)));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((row) => row[i]?.length ?? 0)));
  const right = headers.map(
    (_, i) => rightAligned.includes(i) || (rows.length > 0 && rows.every((row) => typeof row[i] === 'number')),
  );
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (right[i] ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
}
