import pg from 'pg';
import type { Series } from '../../metrics/histogram.js';
import { dbCommitDuration, dbQueryDuration, dbUnavailableErrors, metricsOn, trackPool } from '../../metrics/metrics.js';
import { StoreUnavailableError } from '../store.js';
import { errorChain } from '../error-causes.js';
import { ConfigError, type PostgresConfig } from '../../config.js';
import { tracing } from '../../tracing/tracing.js';
import { tracedClient } from './traced-client.postgres.js';

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

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
]);

/** The reasons an unavailable database is counted under (plant_store_db_unavailable_errors_total). */
export type UnavailableReason = 'read_only' | 'shutdown' | 'connection' | 'timeout' | 'overloaded' | 'misconfigured';

// SQLSTATEs meaning "this server cannot take the request now", as opposed to
// a fault in the statement. 25006: the server is a read-only standby, which
// is what a pool sees of a primary that a failover or switchover demoted, or
// that Patroni restarted as a standby before promoting it again. 57P01-57P03:
// shut down by an administrator, after a crash, or not started yet. 57014: a
// statement timeout or cancel, the database too slow to answer. 25P03: the
// server ended an idle transaction's session. 53300: too many connections.
const UNAVAILABLE_SQLSTATES = new Map<string, UnavailableReason>([
  ['25006', 'read_only'],
  ['57P01', 'shutdown'],
  ['57P02', 'shutdown'],
  ['57P03', 'shutdown'],
  ['57014', 'timeout'],
  ['25P03', 'connection'],
  ['53300', 'overloaded'],
]);

// pg and pg-pool report lost or unobtainable connections with plain Errors.
const TIMEOUT_MESSAGES = /^(timeout exceeded when trying to connect|timeout expired|Query read timeout)/;
const LOST_MESSAGES =
  /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end on the pool)/;

/** Seconds a client is asked to wait before retrying: a failover takes several, and clients back off from there. */
export const RETRY_AFTER_SECONDS = 1;

function codeOf(error: object): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** Why the database could not take the request, or undefined when the error is the statement's own fault. */
export function unavailableReason(error: unknown): UnavailableReason | undefined {
  for (const e of errorChain(error)) {
    const reason = ownUnavailableReason(e);
    if (reason) return reason;
  }
  return undefined;
}

function ownUnavailableReason(error: unknown): UnavailableReason | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = codeOf(error);
  if (code !== undefined) {
    const reason = UNAVAILABLE_SQLSTATES.get(code);
    if (reason) return reason;
    if (NETWORK_CODES.has(code) || code.startsWith('08')) return 'connection';
  }
  if (TIMEOUT_MESSAGES.test(error.message)) return 'timeout';
  if (LOST_MESSAGES.test(error.message)) return 'connection';
  return undefined;
}

/** True when the error says the database could not take the request, not that the statement was wrong. */
export function isUnavailableError(error: unknown): boolean {
  return unavailableReason(error) !== undefined;
}

/** The server takes no writes: a standby (not, or no longer, the primary), or a session made read-only. */
export class ReadOnlyServerError extends Error {
  override name = 'ReadOnlyServerError';
  // Counted and answered like the server's own refusal to write on a standby.
  readonly code = '25006';
  constructor() {
    super(
      'the database server takes no writes: a standby, not the primary (a failover or switchover is under way), or read-only',
    );
  }
}

// On during recovery (a standby) and in a session made read-only
// (default_transaction_read_only), where every write would fail with 25006.
const IS_READ_ONLY = "SELECT current_setting('transaction_read_only') = 'on' AS read_only";

/** Throws ReadOnlyServerError unless `client` is connected to a server that takes writes (the primary). */
export async function assertWritable(client: pg.ClientBase): Promise<void> {
  const { rows } = await client.query<{ read_only: boolean }>(IS_READ_ONLY);
  if (rows[0]?.read_only !== false) throw new ReadOnlyServerError();
}

// PgBouncer's answer to a startup packet with a parameter it does not know.
const REFUSED_PARAMETER = /unsupported startup parameter:?\s*([\w.]+)?/i;

/** The server (in practice a transaction pooler) refused a startup parameter Plant Store sends. */
export class RefusedStartupParameterError extends ConfigError {
  override name = 'RefusedStartupParameterError';
  constructor(parameter: string | undefined, options: ErrorOptions) {
    super(
      `the database server refused the startup parameter ${parameter ? `"${parameter}"` : 'Plant Store sent'}, ` +
        'as PgBouncer in transaction pooling mode does: set --pg-pooler transaction (PLANTS_PG_POOLER=transaction), ' +
        'which sends no startup parameters and no named prepared statements',
      options,
    );
  }
}

/** The RefusedStartupParameterError that `error` is, wraps, or means; undefined for any other error. */
export function refusedStartupParameter(error: unknown): RefusedStartupParameterError | undefined {
  for (const e of errorChain(error)) {
    if (!(e instanceof Error)) continue;
    if (e instanceof RefusedStartupParameterError) return e;
    const m = REFUSED_PARAMETER.exec(e.message);
    if (m) return new RefusedStartupParameterError(m[1], { cause: e });
  }
  return undefined;
}

// A named prepared statement missing on, or already on, the server connection
// the client believes it is talking to: a transaction pooler hands each
// transaction whichever server connection is free.
function lostPreparedStatement(error: unknown): ConfigError | undefined {
  if (!(error instanceof pg.DatabaseError) || (error.code !== '26000' && error.code !== '42P05')) return undefined;
  if (!/prepared statement/.test(error.message)) return undefined;
  return new ConfigError(
    `${error.message}: named prepared statements do not work through a transaction pooler such as PgBouncer; ` +
      'set --pg-pooler transaction (PLANTS_PG_POOLER=transaction)',
    { cause: error },
  );
}

function toStoreError(error: unknown): unknown {
  // A refused startup parameter or a lost prepared statement is still a 503
  // for requests (the store cannot be used as configured), with the cause
  // that names the fix in the log.
  const misconfigured = refusedStartupParameter(error) ?? lostPreparedStatement(error);
  if (misconfigured) {
    dbUnavailableErrors.inc({ reason: 'misconfigured' });
    return new StoreUnavailableError(misconfigured);
  }
  const reason = unavailableReason(error);
  if (reason === undefined) return error;
  dbUnavailableErrors.inc({ reason });
  return new StoreUnavailableError(error, RETRY_AFTER_SECONDS);
}

/**
 * The error a start reports: a refused startup parameter as the setting that
 * fixes it, an unreachable database as StoreUnavailableError (left as it is
 * when already one), anything else unchanged.
 */
export function startupError(error: unknown): unknown {
  const refused = refusedStartupParameter(error);
  if (refused) return refused;
  if (error instanceof StoreUnavailableError) return error;
  return isUnavailableError(error) ? new StoreUnavailableError(error) : error;
}

// A server-reported fault of the statement (constraint, syntax) leaves the
// connection reusable. Anything else may have broken it, and one that says the
// server cannot take requests now (a standby, shutting down, too slow) is not
// kept either: its replacement goes wherever the primary is by then.
function connectionSurvives(error: unknown): boolean {
  return error instanceof pg.DatabaseError && unavailableReason(error) === undefined;
}

/**
 * Runs `work` between BEGIN and COMMIT on `client`, and ROLLBACK when it
 * throws. Should the rollback fail too, the session's state is unknown: the
 * error then thrown is not a database error, so that the connection is
 * discarded instead of pooled.
 */
export async function inTransaction<T>(client: pg.PoolClient, work: () => Promise<T>): Promise<T> {
  await client.query('BEGIN');
  try {
    const result = await work();
    await client.query('COMMIT');
    return result;
  } catch (error) {
    try {
      await client.query('ROLLBACK');
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
