/**
 * `LIMIT` with a bound parameter, written so that SQLite does not re-prepare
 * the statement on every run. SQLite plans a bare `LIMIT ?` with the bound
 * value and marks the statement stale whenever that parameter is bound again,
 * which better-sqlite3 does on every run: each run then parses and plans the
 * statement anew, as costly as reading a whole page of 100 plants. A unary plus
 * hides the value from the planner and changes nothing else.
 * (eslint.config.js refuses a bare `LIMIT ?` in the SQLite store.)
 */
export function boundLimit(param: string): string {
  return `LIMIT +${param}`;
}
