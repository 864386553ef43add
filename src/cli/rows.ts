// How the list commands print: aligned columns under a header for people,
// or one JSON object per line for scripts (--json).

/** The rows as a table: the header's labels, then each row, columns two spaces apart. */
export function printTable<K extends string>(
  out: NodeJS.WritableStream,
  header: Record<K, string>,
  rows: readonly Record<K, string>[],
): void {
  const cols = Object.keys(header) as K[];
  const width = cols.map((c) => Math.max(header[c].length, ...rows.map((r) => r[c].length)));
  for (const r of [header, ...rows]) {
    out.write(
      cols
        .map((c, i) => r[c].padEnd(width[i]!))
        .join('  ')
        .trimEnd() + '\n',
    );
  }
}

/** The rows as JSON Lines. */
export function printJsonLines(out: NodeJS.WritableStream, rows: readonly object[]): void {
  for (const row of rows) out.write(JSON.stringify(row) + '\n');
}

/** A command's report as one JSON object on one line (--json). */
export function printJson(out: NodeJS.WritableStream, report: object): void {
  printJsonLines(out, [report]);
}
