import pg from 'pg';
import type { Series } from '../../metrics/histogram.js';
import { dbCommitDuration, dbQueryDuration, metricsOn, trackPool } from '../../metrics/metrics.js';
import type { PostgresConfig } from '../../config.js';
import { operation, type Operation } from '../operation.js';
import { tracing } from '../../tracing/tracing.js';
import { tracedClient } from './traced-client.postgres.js';
import { ReadOnlyServerError, connectionSurvives, toStoreError } from './errors.postgres.js';

export interface PgPoolOverrides {
  max?: number;
  /** 0 disables the timeout (migrations may wait on the migrator's lock). */
  statementTimeoutMs?: number;
}

// Long enough for a healthy server under load, short enough that an outage
// answers 503 promptly instead of queueing requests behind dead connects.
const CONNECT_TIMEOUT_MS = 3000;

const INT8_OID = 20;
const parseInt8 = (value: string): bigint => BigInt(value);

// int8 columns hold plant ids across the whole int64 range, which a JS number
// cannot represent. The override is per pool so other pg users in the process
// (tests, tools) keep the library's defaults.
const bigintTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? parseInt8
      : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/**
 * A client for transaction poolers (PgBouncer pool_mode=transaction before
 * 1.21): every statement is sent unnamed, since a named prepared statement
 * lives on one server connection and the pooler hands each transaction
 * whichever connection is free. The price is a parse per statement.
 */
class UnnamedStatementsClient extends pg.Client {
  override query(...args: unknown[]): never {
    const config = args[0];
    if (typeof config === 'object' && config !== null && 'name' in config && !('submit' in config)) {
      args[0] = { ...config, name: undefined };
    }
    return (super.query as (...a: unknown[]) => never)(...args);
  }
}

// All connection setup for the PostgreSQL store lives here, so the server's
// pool and the migrator's get the same settings.
export function createPgPool(config: PostgresConfig, overrides: PgPoolOverrides = {}): pg.Pool {
  const statementTimeout = overrides.statementTimeoutMs ?? config.statementTimeoutMs;
  // Behind a transaction pooler the startup packet may carry only what the
  // pooler knows (PgBouncer refuses statement_timeout and options): the
  // server-side timeout and synchronous_commit then come from the role's or
  // database's settings (ALTER ROLE ... SET), and the client-side limit below
  // still holds.
  const direct = config.pooler === 'none';
  const traces = tracing();
  const client = direct ? pg.Client : UnnamedStatementsClient;
  const pool = new pg.Pool({
    connectionString: config.url,
    max: overrides.max ?? config.poolSize,
    ...(direct && { statement_timeout: statementTimeout }),
    ...((traces || !direct) && { Client: traces ? tracedClient(client, traces) : client }),
    // statement_timeout is enforced by the server, which never sees the query
    // when the network drops packets; this client-side limit turns such a hang
    // into a 503 a second after the server would have given up.
    ...(statementTimeout > 0 ? { query_timeout: statementTimeout + 1000 } : {}),
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A connection, once opened, stays open while idle (pg's default closes
    // it after 10 s). The connections that a burst after a lull opens again
    // cost its requests tens of milliseconds each: the p99 of a list rose
    // from 5 ms to 38-53 ms after 12 s without requests. The start-up check
    // already counts the whole pool against max_connections.
    idleTimeoutMillis: 0,
    // Detects a peer that vanished without closing the socket (host down,
    // network partition) instead of waiting on it forever.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'plant-store',
    types: bigintTypes,
    // durability=normal: a commit is acknowledged before PostgreSQL flushes
    // its WAL. It still survives a crash of this process, not of PostgreSQL's host.
    ...(direct && config.durability === 'normal' ? { options: '-c synchronous_commit=off' } : {}),
  });
  // An idle client whose server went away emits here. pg-pool has already
  // dropped it and the next checkout opens a fresh connection; without a
  // listener the event would be an uncaught exception that kills the process.
  // The error itself is deliberately dropped, not logged: the store has no
  // logger, and the outage it signals is not lost: the next statement that
  // needs the database fails to connect, surfaces as StoreUnavailableError,
  // and is logged with the 503 it turns into (and /readyz answers 503).
  pool.on('error', () => {});
  if (direct) primaryOnly.add(pool);
  trackPool(pool);
  return pool;
}

/** The statements on a session itself rather than on a table, for every file that needs one. */
export const SESSION_SQL = {
  // Locks: none. A transaction under READ COMMITTED, the server's default:
  // each statement sees what committed before it began, and the locks a
  // statement takes (each says which) are held to COMMIT or ROLLBACK.
  begin: operation<[]>('begin', 'BEGIN'),
  commit: operation<[]>('commit', 'COMMIT'),
  rollback: operation<[]>('rollback', 'ROLLBACK'),
  // Locks: none. On during recovery (a standby) and in a session made
  // read-only (default_transaction_read_only), where every write would fail
  // with 25006.
  isReadOnly: operation<[], { read_only: boolean }>(
    'is_read_only',
    "SELECT current_setting('transaction_read_only') = 'on' AS read_only",
  ),
};

/** Throws ReadOnlyServerError unless `client` is connected to a server that takes writes (the primary). */
export async function assertWritable(client: pg.ClientBase): Promise<void> {
  const { rows } = await run(client, SESSION_SQL.isReadOnly, []);
  if (rows[0]?.read_only !== false) throw new ReadOnlyServerError();
}

/**
 * Runs `work` between BEGIN and COMMIT on `client`, and ROLLBACK when it
 * throws. Should the rollback fail too, the session's state is unknown: the
 * error then thrown is not a database error, so that the connection is
 * discarded instead of pooled.
 */
export async function inTransaction<T>(client: pg.PoolClient, work: () => Promise<T>): Promise<T> {
  await run(client, SESSION_SQL.begin, []);
  try {
    const result = await work();
    await run(client, SESSION_SQL.commit, []);
    return result;
  } catch (error) {
    try {
      await run(client, SESSION_SQL.rollback, []);
    } catch {
      throw new Error('a transaction failed and could not be rolled back', { cause: error });
    }
    throw error;
  }
}

const queryTime = dbQueryDuration.series('postgres');
const commitTime = dbCommitDuration.series('postgres');

/**
 * Runs `work` on one pooled connection, mapping outages to StoreUnavailableError.
 * Used instead of pool.query, which discards the connection (and its prepared
 * statements) after any failed statement, even a constraint violation.
 */
export function withClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return metricsOn ? timed(queryTime, pool, work) : onPooledClient(pool, work);
}

/** withClient for work that writes: timed as a commit. */
export function writeWithClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return metricsOn ? timed(commitTime, pool, work) : onPooledClient(pool, work);
}

async function timed<T>(series: Series, pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await onPooledClient(pool, work);
  } finally {
    series.observe((performance.now() - started) / 1000);
  }
}

// Pools that check each new connection leads to the primary before its first
// use: a connection opened while a failover is under way can reach the old
// primary, restarted as a standby, where reads would be served stale. Only
// for direct connections: behind a transaction pooler each transaction may
// run on another server connection, so a check says nothing about the next.
const primaryOnly = new WeakSet<pg.Pool>();
const checkedPrimary = new WeakSet<pg.PoolClient>();

async function onPooledClient<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw toStoreError(error);
  }
  // A checked-out client emits 'error' when its socket dies, even mid-query;
  // unheard, that event would crash the process.
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on('error', onError);
  try {
    if (primaryOnly.has(pool) && !checkedPrimary.has(client)) {
      await assertWritable(client);
      checkedPrimary.add(client);
    }
    return await work(client);
  } catch (error) {
    if (!connectionSurvives(error)) broken ??= error instanceof Error ? error : new Error(String(error));
    throw toStoreError(error);
  } finally {
    client.off('error', onError);
    // Releasing with an error destroys the connection instead of pooling it.
    client.release(broken);
  }
}

/**
 * The connection a process holds for LISTEN (live events of other
 * processes): its own, outside the pool, so that it stays in its session.
 * Only for direct connections (or a session pooler): behind a transaction
 * pooler a session's LISTEN would be left on whichever server connection the
 * pooler chose. A heartbeat query notices a peer gone silent long before TCP
 * keep-alive does, bounded by a client-side limit like every other query.
 */
export function createListenClient(config: PostgresConfig): pg.Client {
  return new pg.Client({
    connectionString: config.url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    query_timeout: CONNECT_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'plant-store-events',
    // A NOTIFY is a transaction of its own: no need to wait for its commit to
    // reach the disk, since a word lost in a crash only leaves the poll to deliver.
    options: '-c synchronous_commit=off',
  });
}

const asIs = (value: string): string => value;
/** The parsers of an operation read `asText`: none. */
const TEXT_COLUMNS = { getTypeParser: () => asIs } as unknown as pg.CustomTypesConfig;

/**
 * Runs `op` on `client` as its named prepared statement, with `values`;
 * typed by the operation. The request paths run through here: one object
 * per call, of one shape, as pg takes it.
 */
export function run<Params extends unknown[], Row>(
  client: pg.ClientBase,
  op: Operation<Params, Row>,
  values: Params,
): Promise<pg.QueryResult<Row extends object ? Row : never>> {
  const config = {
    name: op.name,
    text: op.text,
    values,
    rowMode: op.rowMode,
    types: op.asText ? TEXT_COLUMNS : undefined,
  };
  return client.query(config as pg.QueryConfig) as never;
}
