import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { ConfigError, SETTINGS, isPostgresUrl } from '../config.js';
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

/**
 * Whether serve is about to create a new SQLite store (no file at --db), said
 * at start-up so that a mistyped path is noticed. A path whose folder does not
 * exist is refused (ConfigError: exit 2) rather than created with its folders,
 * unless it is the default path, which a first `npm start` creates: `migrate`
 * creates a store anywhere on purpose.
 */
export function newStoreAt(db: string): string | undefined {
  const where = storeLocation(db);
  if (where.store !== 'sqlite' || existsSync(where.path)) return undefined;
  const folder = dirname(where.path);
  if (!existsSync(folder) && db !== SETTINGS.db.default) {
    throw new ConfigError(
      `--db ${db}: the folder ${folder} does not exist, so no store is there; check --db (or PLANTS_DB), ` +
        `or create a new store there with: plant-store migrate --db ${db}`,
    );
  }
  return where.path;
}

/** The start-up log line naming the store, and saying so plainly when it was created just now. */
export function logStoreLine(
  log: { info(obj: object, msg: string): void },
  where: StoreLocation,
  created: boolean,
): void {
  if (created && where.store === 'sqlite') {
    log.info(
      { store: where, created: true },
      `store: created a new, empty SQLite file ${where.path} (none was there; if you meant an existing store, stop and check --db)`,
    );
  } else log.info({ store: where }, `store: ${describeLocation(where)}`);
}
