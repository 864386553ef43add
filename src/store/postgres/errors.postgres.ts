// How PostgreSQL and pg report what went wrong, in one place: which errors
// mean "the database cannot take the request now" (503, the connection
// dropped) rather than a fault of the statement, and which mean "configured
// for the wrong kind of server" (a transaction pooler). The connect file and
// the start-up path turn them into the store's own errors.
import pg from 'pg';
import { dbUnavailableErrors } from '../../metrics/metrics.js';
import { StoreUnavailableError } from '../store.js';
import { errorChain } from '../error-causes.js';
import { ConfigError } from '../../config.js';

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

export function toStoreError(error: unknown): unknown {
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
export function connectionSurvives(error: unknown): boolean {
  return error instanceof pg.DatabaseError && unavailableReason(error) === undefined;
}
