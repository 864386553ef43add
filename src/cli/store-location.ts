import { resolve } from 'node:path';
import { isPostgresUrl } from '../config.js';

export type StoreLocation =
  | { store: 'sqlite'; path: string }
  | { store: 'postgres'; host: string; port: number; database: string; user: string | undefined };

/**
 * Which store --db names and where, without the password: what the start-up
 * log says, and what connection errors name. Missing URL parts take pg's
 * defaults (host localhost, port 5432, database named after the user).
 */
export function storeLocation(db: string): StoreLocation {
  if (!isPostgresUrl(db)) return { store: 'sqlite', path: resolve(db) };
  const url = new URL(db);
  const user = url.username ? decodeURIComponent(url.username) : (url.searchParams.get('user') ?? undefined);
  const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || user || '(the user name)';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1') || url.searchParams.get('host') || 'localhost';
  return { store: 'postgres', host, port: Number(url.port || 5432), database, user };
}

/** "host:port", with brackets around an IPv6 address; a socket folder stays as it is. */
export function hostPort(location: { host: string; port: number }): string {
  if (location.host.startsWith('/')) return `${location.host} (port ${location.port})`;
  return `${location.host.includes(':') ? `[${location.host}]` : location.host}:${location.port}`;
}

/** One line for the start-up log: which store, and where. */
export function describeLocation(location: StoreLocation): string {
  if (location.store === 'sqlite') return `SQLite file ${location.path}`;
  const as = location.user ? ` as user "${location.user}"` : '';
  return `PostgreSQL database "${location.database}" on ${hostPort(location)}${as}`;
}
