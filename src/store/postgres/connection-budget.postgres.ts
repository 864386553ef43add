import { ConfigError, type PostgresConfig } from '../../config.js';
import { operation } from '../operation.js';
import { createPgPool, run, withClient } from './db-connect.postgres.js';
import { startupError } from './errors.postgres.js';

const SQL = {
  // Locks: none; pg_stat_activity is a snapshot, taken once per transaction.
  // The connection limit, the slots kept for superusers, and the client
  // connections open now other than this one.
  room: operation<[], { max: number; reserved: number; in_use: number }>(
    'connection_room',
    `SELECT current_setting('max_connections')::int AS max,
      current_setting('superuser_reserved_connections')::int
        + coalesce(current_setting('reserved_connections', true), '0')::int AS reserved,
      (SELECT count(*) FROM pg_stat_activity
        WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())::int AS in_use`,
  ),
};

/** How many more connections the server accepts from roles that are not superusers, and why. */
export interface ConnectionRoom {
  maxConnections: number;
  /** superuser_reserved_connections plus reserved_connections (PostgreSQL 16+). */
  reserved: number;
  /** Client connections open now, other than the one asking. */
  inUse: number;
}

export function roomLeft({ maxConnections, reserved, inUse }: ConnectionRoom): number {
  return maxConnections - reserved - inUse;
}

/** Asks the server how many connections it allows and how many are taken. */
export async function connectionRoom(config: PostgresConfig): Promise<ConnectionRoom> {
  const pool = createPgPool(config, { max: 1 });
  try {
    const { rows } = await withClient(pool, (client) => run(client, SQL.room, []));
    const row = rows[0]!;
    return { maxConnections: row.max, reserved: row.reserved, inUse: row.in_use };
  } catch (error) {
    // The first connection of a start: a pooler refusing our startup parameters shows here.
    throw startupError(error);
  } finally {
    await pool.end();
  }
}

/**
 * Refuses (ConfigError) a start whose processes could open more connections
 * than the server has room for: each of `processes` opens up to `poolSize`,
 * and one for LISTEN.
 * The room is max_connections, less the slots kept for superusers (so an
 * administrator can still get in) and the connections open now. Behind a
 * transaction pooler the server's limit is not ours to count: the pooler's
 * pool size is what reaches PostgreSQL, and the check is skipped.
 */
export async function checkConnectionBudget(config: PostgresConfig, processes: number): Promise<void> {
  if (config.pooler === 'transaction') return;
  const room = await connectionRoom(config);
  // Each process also holds one connection of its own for LISTEN (live events of the others).
  const needed = processes * (config.poolSize + 1);
  const left = roomLeft(room);
  if (needed <= left) return;
  const each = `--pg-pool-size ${config.poolSize} + 1 for live events`;
  const demand =
    processes > 1
      ? `--workers ${processes} × (${each}) = ${needed} PostgreSQL connections`
      : `${each} = ${needed} PostgreSQL connections`;
  throw new ConfigError(
    `${demand} would not fit: the server has room for ${Math.max(0, left)} ` +
      `(max_connections ${room.maxConnections}, less ${room.reserved} reserved for superusers, ` +
      `less ${room.inUse} in use now). Lower --pg-pool-size (PLANTS_PG_POOL_SIZE) or --workers, ` +
      'raise max_connections, or put PgBouncer in front (--pg-pooler transaction)',
  );
}
