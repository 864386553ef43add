// PostgreSQL-specific helpers for the scale-out and outage suites: direct
// queries on a suite's database, pg_terminate_backend of the server's
// connections, and a TCP proxy on 127.0.0.1 that can be stopped, restarted on
// the same port, or made to drop traffic (a partition) to simulate outages.
import assert from 'node:assert/strict';
import net from 'node:net';
import pg from 'pg';
import { PG_URL } from './stores.js';

/** The application_name the service's pools connect with (db-connect.postgres.ts). */
export const APP_NAME = 'plant-store';

export function databaseOf(url: string): string {
  return decodeURIComponent(new URL(url).pathname.slice(1));
}

/** `url` with its host and port replaced by 127.0.0.1:port (the proxy). */
export function viaPort(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}

/** Host and port a postgres:// URL points at (defaults as libpq: localhost, 5432). */
export function targetOf(url: string): { host: string; port: number } {
  const u = new URL(url);
  return { host: u.hostname || '127.0.0.1', port: u.port ? Number(u.port) : 5432 };
}

/** One statement on its own short-lived connection (not through the service). */
export async function query<R extends pg.QueryResultRow = Record<string, unknown>>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: 5000,
    application_name: 'plant-store-tests',
  });
  client.on('error', () => {});
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Pids of the service's backends (application_name plant-store) connected to `db`'s database. */
export async function serviceBackends(db: string): Promise<number[]> {
  const rows = await query<{ pid: number }>(
    PG_URL,
    'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid() ORDER BY pid',
    [databaseOf(db), APP_NAME],
  );
  return rows.map((r) => r.pid);
}

/**
 * pg_terminate_backend on every service connection to `db`'s database, then
 * waits (bounded) until those backends are gone. Returns how many were terminated.
 */
export async function terminateServiceBackends(db: string, timeoutMs = 5000): Promise<number> {
  const rows = await query<{ pid: number; ok: boolean }>(
    PG_URL,
    `SELECT pid, pg_terminate_backend(pid) AS ok FROM pg_stat_activity
     WHERE datname = $1 AND application_name = $2 AND pid <> pg_backend_pid()`,
    [databaseOf(db), APP_NAME],
  );
  const pids = new Set(rows.filter((r) => r.ok).map((r) => r.pid));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const still = (await serviceBackends(db)).filter((pid) => pids.has(pid));
    if (still.length === 0) return pids.size;
    if (Date.now() > deadline)
      throw new Error(`backends ${still.join(', ')} still present ${timeoutMs} ms after pg_terminate_backend`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

interface Pair {
  client: net.Socket;
  upstream: net.Socket | undefined;
}

/**
 * A TCP proxy on 127.0.0.1 in front of PostgreSQL.
 * - stop(): destroys every connection and closes the listener (connects are refused);
 *   start() listens again on the same port.
 * - partition(): keeps the listener and sockets open but forwards nothing in
 *   either direction (packets "lost"); heal() resumes forwarding what was held.
 */
export class TcpProxy {
  #server: net.Server | undefined;
  #port = 0;
  #pairs = new Set<Pair>();
  #partitioned = false;
  /** Connections accepted since construction. */
  accepted = 0;

  constructor(
    readonly targetHost: string,
    readonly targetPort: number,
  ) {}

  static for(url: string): TcpProxy {
    const { host, port } = targetOf(url);
    return new TcpProxy(host, port);
  }

  get port(): number {
    if (this.#port === 0) throw new Error('proxy was never started');
    return this.#port;
  }

  get listening(): boolean {
    return this.#server !== undefined;
  }

  /** Open connections (client side). */
  get connections(): number {
    return this.#pairs.size;
  }

  /** Listens on 127.0.0.1: a free port the first time, the same port afterwards. */
  async start(): Promise<number> {
    if (this.#server) return this.#port;
    const server = net.createServer((client) => this.#accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: this.#port, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', () => {});
    this.#server = server;
    this.#port = (server.address() as net.AddressInfo).port;
    return this.#port;
  }

  /** Destroys every connection and closes the listener: the database is "down". */
  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const pair of [...this.#pairs]) this.#drop(pair);
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Stops forwarding in both directions without closing anything. */
  partition(): void {
    this.#partitioned = true;
    for (const pair of this.#pairs) {
      pair.client.unpipe();
      pair.client.pause();
      if (pair.upstream) {
        pair.upstream.unpipe();
        pair.upstream.pause();
      }
    }
  }

  /** Resumes forwarding, delivering whatever was held back. */
  heal(): void {
    this.#partitioned = false;
    for (const pair of this.#pairs) this.#forward(pair);
  }

  #accept(client: net.Socket): void {
    this.accepted++;
    const pair: Pair = { client, upstream: undefined };
    this.#pairs.add(pair);
    client.on('error', () => this.#drop(pair));
    client.on('close', () => this.#drop(pair));
    if (this.#partitioned) client.pause();
    else this.#forward(pair);
  }

  #forward(pair: Pair): void {
    if (!this.#pairs.has(pair)) return;
    if (!pair.upstream) {
      const upstream = net.connect({ host: this.targetHost, port: this.targetPort });
      pair.upstream = upstream;
      upstream.on('error', () => this.#drop(pair));
      upstream.on('close', () => this.#drop(pair));
    }
    pair.client.pipe(pair.upstream);
    pair.upstream.pipe(pair.client);
    pair.client.resume();
    pair.upstream.resume();
  }

  #drop(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.destroy();
    pair.upstream?.destroy();
  }
}

/**
 * A fresh, empty database next to PG_URL's (for tests that need more than the
 * suite's one); drop() removes it, terminating whatever is still connected.
 */
export async function createScratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `plants_test_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
  await query(PG_URL, `CREATE DATABASE ${name}`);
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      await query(PG_URL, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** The shape every non-2xx answer has: JSON {"error": status, "message": "..."} and nothing else. Returns the message. */
export function expectErrorBody(
  res: { status: number; headers: Record<string, unknown>; body: string },
  status: number,
  what: string,
): string {
  assert.equal(res.status, status, `${what}: expected ${status}, got ${res.status}: ${res.body}`);
  assert.match(String(res.headers['content-type']), /^application\/json\b/, `${what}: content-type`);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(body).sort(), ['error', 'message'], `${what}: Error body keys in ${res.body}`);
  assert.equal(body.error, status, `${what}: error field in ${res.body}`);
  assert.equal(typeof body.message, 'string', `${what}: message in ${res.body}`);
  assert.notEqual(body.message, '', `${what}: empty message`);
  return body.message as string;
}
