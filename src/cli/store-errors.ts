import { errorChain } from '../store/error-causes.js';
import type { StoreLocation } from './store-location.js';
import { hostPort } from '../db-url.js';

/** A failure the CLI can state in one line; main() prints its message alone. */
export class CliError extends Error {
  override name = 'CliError';
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

const NOT_FOUND = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME']);
const UNREACHABLE = new Set(['EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN']);
const TIMEOUT = /timeout|timed out/i;

/**
 * One line saying why PostgreSQL could not be used, for the failures people
 * actually hit on a first start: no such database, host, port, user or
 * password. Undefined for anything else.
 */
export function explainPostgresFailure(
  error: unknown,
  where: Extract<StoreLocation, { store: 'postgres' }>,
): string | undefined {
  const at = hostPort(where);
  const user = where.user ?? '(default user)';
  for (const e of errorChain(error)) {
    const code = codeOf(e);
    const message = e instanceof Error ? e.message : String(e);
    switch (code) {
      case '3D000':
        return (
          `PostgreSQL at ${at} has no database "${where.database}"; create it with: ` +
          `createdb -h ${where.host} -p ${where.port}${where.user ? ` -U ${where.user}` : ''} ${where.database}`
        );
      case '28P01':
        return `PostgreSQL at ${at} refused the password for user "${user}"; check the password in --db (or PLANTS_DB, DATABASE_URL)`;
      case '28000':
        return `PostgreSQL at ${at} refused user "${user}": ${message}`;
      case 'ECONNREFUSED':
        return `cannot connect to PostgreSQL at ${at}: connection refused (is PostgreSQL running and listening on port ${where.port}?)`;
      case 'ECONNRESET':
        return `cannot connect to PostgreSQL at ${at}: the connection was reset (is that port a PostgreSQL server?)`;
    }
    if (code !== undefined && NOT_FOUND.has(code))
      return `cannot connect to PostgreSQL: host "${where.host}" not found (check the host in --db, PLANTS_DB or DATABASE_URL)`;
    if (code !== undefined && UNREACHABLE.has(code))
      return `cannot connect to PostgreSQL at ${at}: host unreachable (${code})`;
    if (code === 'ETIMEDOUT' || (code === undefined && TIMEOUT.test(message) && /connect/i.test(message)))
      return `cannot connect to PostgreSQL at ${at}: no answer in time (check the host, the port and any firewall)`;
    if (code !== undefined && code.startsWith('08')) return `cannot connect to PostgreSQL at ${at}: ${message}`;
  }
  return undefined;
}
