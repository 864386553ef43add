// What a --db URL says, for every message and log line that names the
// database: where a PostgreSQL URL points, and any URL's text without its
// password. Beside config.ts, below every layer that names the database.
import { parse } from 'pg-connection-string';

/** Where pg connects for a PostgreSQL URL. */
export interface PostgresTarget {
  /** A host name, an address, or the folder of a Unix socket. */
  host: string;
  port: number;
  /** Undefined when the URL names neither a database nor the user it is then named after. */
  database: string | undefined;
  user: string | undefined;
}

// parse() reads the files these parameters name, which pg needs and a location does not.
const SSL_FILES = ['sslcert', 'sslkey', 'sslrootcert'];

/**
 * Where pg connects for `url`, read by pg's own parser (pg-connection-string),
 * so that the URL's every form comes out as pg takes it: a host or user given
 * as a query parameter (`postgres:///?host=/var/run/postgresql&user=bob`)
 * wins over the one before the path, and an encoded socket folder
 * (`postgres://%2Fvar%2Frun%2Fpostgresql/plants`) is decoded. What the URL
 * leaves out takes pg's defaults: host localhost, port 5432, and a database
 * named after the user. pg would first look at PGHOST, PGPORT, PGUSER and
 * PGDATABASE, and take the login name for a user; only config.ts reads the
 * environment, so those are not seen here, and a user the URL does not name
 * is undefined.
 */
export function postgresTarget(url: string): PostgresTarget {
  const parts = parse(withoutSslFiles(url));
  const user = parts.user || undefined;
  return {
    host: parts.host || 'localhost',
    port: Number(parts.port || 5432),
    database: parts.database || user,
    user,
  };
}

/** A URL's query parameters (what follows ?, up to any #), or undefined when it has none. */
function queryOf(url: string): URLSearchParams | undefined {
  const q = url.indexOf('?');
  return q < 0 ? undefined : new URLSearchParams(url.slice(q + 1).split('#', 1)[0]);
}

/** The files a PostgreSQL URL's query names for TLS (sslcert, sslkey, sslrootcert), which pg reads when it connects. */
export function sslFiles(url: string): { name: string; path: string }[] {
  const query = queryOf(url);
  return SSL_FILES.flatMap(
    (name) =>
      query
        ?.getAll(name)
        .filter(Boolean)
        .map((path) => ({ name, path })) ?? [],
  );
}

function withoutSslFiles(url: string): string {
  const query = queryOf(url);
  if (!query || !SSL_FILES.some((name) => query.has(name))) return url;
  for (const name of SSL_FILES) query.delete(name);
  return `${url.slice(0, url.indexOf('?'))}?${query}`;
}

/** The sslmode values pg takes: libpq's, and pg's own no-verify. */
export const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'];

/**
 * The sslmode a PostgreSQL URL asks for, as pg reads it: the last sslmode
 * parameter of its query; undefined when it names none (or an empty one).
 * pg takes any value it does not know for a request to use TLS, so a typo
 * would show up only as a failure to connect. The query is read here, not
 * by parse(), which would also act on the other SSL parameters (read the
 * files they name, refuse some combinations) and warn about some modes.
 */
export function postgresSslMode(url: string): string | undefined {
  return queryOf(url)?.getAll('sslmode').at(-1) || undefined;
}

/** "host:port", with brackets around an IPv6 address; a socket folder stays as it is. */
export function hostPort(target: { host: string; port: number }): string {
  if (target.host.startsWith('/')) return `${target.host} (port ${target.port})`;
  return `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
}

/**
 * A URL fit for a message, even a malformed one no parser reads: everything
 * between the scheme and the last "@" (user and password, whatever
 * characters the password holds) becomes "***", and what follows is shown
 * only when it looks like a host, port, path (a database name) and plain query (an
 * "@" may sit in the password). Without an "@", a colon in the authority not followed by a
 * port number is taken for a password too, and so is the value of a
 * password parameter of the query. Text without a scheme (a file path) is
 * returned as it is.
 */
export function withoutPassword(text: string): string {
  return withoutUserInfo(text.replace(/([?&](?:ssl)?password=)[^&#]*/gi, '$1***'));
}

function withoutUserInfo(text: string): string {
  const prefix = /^[a-z][a-z0-9+.-]*(?::\/{0,3}|\/\/)/i.exec(text)?.[0] ?? '';
  const rest = text.slice(prefix.length);
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const after = rest.slice(at + 1);
    return `${prefix}***@${/^[\w.[\]:-]*(\/[\w.-]*)*(\?[\w.=&%*-]*)?$/.test(after) ? after : '…'}`;
  }
  if (prefix === '') return text;
  const authority = rest.split(/[/?#]/, 1)[0]!;
  return /:(?!\d*$)/.test(authority) ? `${prefix}***${rest.slice(authority.length)}` : text;
}
