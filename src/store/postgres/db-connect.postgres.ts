import pg from 'pg';
import type { Series } from '../../metrics/histogram.js';
import { dbCommitDuration, dbQueryDuration, metricsOn, trackPool } from '../../metrics/metrics.js';
import { StoreUnavailableError } from '../store.js';
import { errorChain } from '../error-causes.js';
import { ConfigError, type PostgresConfig } from '../../config.js';

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
  const pool = new pg.Pool({
    connectionString: config.url,
    max: overrides.max ?? config.poolSize,
    ...(direct ? { statement_timeout: statementTimeout } : { Client: UnnamedStatementsClient }),
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

// SQLSTATEs meaning "the server cannot serve you right now", as opposed to a
// fault in the statement. 57014 is a statement timeout or cancel: the
// database is too slow to answer, and a retry is the right reaction.
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014', '53300']);

// pg and pg-pool report lost or unobtainable connections with plain Errors.
const UNAVAILABLE_MESSAGES =
  /^(Connection terminated|timeout exceeded when trying to connect|timeout expired|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end on the pool|Query read timeout)/;

function codeOf(error: object): string | undefined {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}

/** True when the error, or one it wraps, says the database could not be reached, not that the statement was wrong. */
export function isUnavailableError(error: unknown): boolean {
  return errorChain(error).some(unavailable);
}

function unavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = codeOf(error);
  if (code !== undefined) {
    if (NETWORK_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || code.startsWith('08')) return true;
  }
  return UNAVAILABLE_MESSAGES.test(error.message);
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
  if (misconfigured) return new StoreUnavailableError(misconfigured);
  return isUnavailableError(error) ? new StoreUnavailableError(error) : error;
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

// A server-reported error that does not end the session (constraint, syntax,
// statement timeout) leaves the connection reusable; anything else may have broken it.
function connectionSurvives(error: unknown): boolean {
  if (!(error instanceof pg.DatabaseError)) return false;
  const code = error.code ?? '';
  return !code.startsWith('08') && !code.startsWith('57P');
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
