// How the list commands print: aligned columns under a header for people,
// or one JSON object per line for scripts (--json).
//
// A list can hold hundreds of thousands of rows: widths are found with a loop
// (spreading every row into Math.max overflows the call stack), and lines go
// out in chunks rather than one write per row, so that a slow reader on a pipe
// holds a few hundred pending writes instead of one per row. The executable
// waits for stdout to take everything before it exits (bin.ts).

/** Lines are joined into writes of about this many characters. */
const CHUNK_CHARS = 64 * 1024;

/** Writes one line per item, several lines to a write. */
function writeLines<T>(out: NodeJS.WritableStream, items: readonly T[], line: (item: T) => string): void {
  let chunk = '';
  for (const item of items) {
    chunk += line(item) + '\n';
    if (chunk.length >= CHUNK_CHARS) {
      out.write(chunk);
      chunk = '';
    }
  }
  if (chunk !== '') out.write(chunk);
}

/** The widest value of each column, the header's label included. */
function columnWidths<K extends string>(
  cols: readonly K[],
  header: Record<K, string>,
  rows: readonly Record<K, string>[],
) {
  const width = cols.map((c) => header[c].length);
  for (const r of rows) {
    cols.forEach((c, i) => {
      if (r[c].length > width[i]!) width[i] = r[c].length;
    });
  }
  return width;
}

/** The rows as a table: the header's labels, then each row, columns two spaces apart. */
export function printTable<K extends string>(
  out: NodeJS.WritableStream,
  header: Record<K, string>,
  rows: readonly Record<K, string>[],
): void {
  const cols = Object.keys(header) as K[];
  const width = columnWidths(cols, header, rows);
  const line = (r: Record<K, string>) =>
    cols
      .map((c, i) => r[c].padEnd(width[i]!))
      .join('  ')
      .trimEnd();
  writeLines(out, [header], line);
  writeLines(out, rows, line);
}

/** The rows as JSON Lines. */
export function printJsonLines(out: NodeJS.WritableStream, rows: readonly object[]): void {
  writeLines(out, rows, (row) => JSON.stringify(row));
}

/** A command's report as one JSON object on one line (--json). */
export function printJson(out: NodeJS.WritableStream, report: object): void {
  printJsonLines(out, [report]);
}
