import { resolve } from 'node:path';
import { isPostgresUrl } from '../config.js';
import { hostPort, postgresTarget } from '../db-url.js';

export type StoreLocation =
  | { store: 'sqlite'; path: string }
  | { store: 'postgres'; host: string; port: number; database: string; user: string | undefined };

/**
 * Which store --db names and where, without the password: what the start-up
 * log says, and what connection errors name. A PostgreSQL URL is read as pg
 * reads it (postgresTarget).
 */
export function storeLocation(db: string): StoreLocation {
  if (!isPostgresUrl(db)) return { store: 'sqlite', path: resolve(db) };
  const { host, port, database, user } = postgresTarget(db);
  return { store: 'postgres', host, port, database: database ?? '(the user name)', user };
}

/** One line for the start-up log: which store, and where. */
export function describeLocation(location: StoreLocation): string {
  if (location.store === 'sqlite') return `SQLite file ${location.path}`;
  const as = location.user ? ` as user "${location.user}"` : '';
  return `PostgreSQL database "${location.database}" on ${hostPort(location)}${as}`;
}
