/**
 * `LIMIT` with a bound parameter, written so that SQLite does not re-prepare
 * the statement on every run. SQLite plans a bare `LIMIT ?` with the bound
 * value and marks the statement stale whenever that parameter is bound again,
 * which better-sqlite3 does on every run: each run then parses and plans the
 * statement anew, nearly as costly as reading a page of 100 plants. A unary
 * plus hides the value from the planner and changes nothing else.
 * eslint.config.js refuses a bare `LIMIT ?` in the SQLite store. ANALYZE
 * statistics make SQLite do the same for other parameters, which is why the
 * store never runs ANALYZE (docs/explanation/performance.md).
 */
export function boundLimit(param: string): string {
  return `LIMIT +${param}`;
}
