import type pg from 'pg';
import type { PostgresConfig } from '../../config.js';
import type { EventSignal } from '../store.js';
import { operation } from '../operation.js';
import { assertWritable, createListenClient, run } from './db-connect.postgres.js';

/** The channel every Plant Store process on one database listens on; the word carries no payload. */
const CHANNEL = 'plant_store_events';

const SQL = {
  // Locks: none; NOTIFY is queued and sent at commit, here its own transaction's.
  notify: operation<[]>('events_notify', `NOTIFY ${CHANNEL}`),
  // Locks: none. This session hears every NOTIFY on the channel from now on, its own too.
  listen: operation<[]>('events_listen', `LISTEN ${CHANNEL}`),
  // Locks: none. The session's server process, which every NOTIFY it sends names: its own words are not news.
  backendPid: operation<[], { pid: number }>('events_backend_pid', 'SELECT pg_backend_pid() AS pid'),
  // Locks: none; reads nothing. The heartbeat: a round trip that fails on a connection gone silent.
  heartbeat: operation<[]>('events_heartbeat', 'SELECT 1'),
};
/** Reconnecting after a lost connection waits this long at first, doubling up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;
/** How often the idle connection is checked, so that a silent peer is noticed within seconds. */
const HEARTBEAT_MS = 10_000;

/**
 * LISTEN/NOTIFY between the processes on one PostgreSQL database, on one
 * connection per process of its own (createListenClient), opened on first
 * use. After a write is answered, `NOTIFY plant_store_events` goes out on
 * that connection (one per turn of the event loop, however many writes);
 * PostgreSQL hands it to every listening session once it commits, and each
 * one's streams look for events at once. Its own words come back to the
 * sender too, and are ignored: its streams were woken by the write itself.
 *
 * A connection lost (server restart, failover, network) is opened again
 * after RETRY_MIN_MS, doubling up to RETRY_MAX_MS; once it listens again,
 * the listeners are called, since words sent meanwhile went unheard.
 * Meanwhile, and whenever a word is lost, the poll still delivers.
 */
export class PostgresEventSignal implements EventSignal {
  readonly #listeners = new Set<() => void>();
  /** The connection while it listens. */
  #client: pg.Client | undefined;
  #pid = 0;
  #started = false;
  #closed = false;
  #announcing = false;
  #sending = false;
  #sendAgain = false;
  #retryMs = RETRY_MIN_MS;
  #retry: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(private readonly config: PostgresConfig) {}

  start(): void {
    this.#start();
  }

  listen(listener: () => void): () => void {
    const own = () => listener();
    this.#listeners.add(own);
    this.#start();
    return () => this.#listeners.delete(own);
  }

  announce(): void {
    if (this.#announcing || this.#closed) return;
    this.#start();
    this.#announcing = true;
    setImmediate(() => {
      this.#announcing = false;
      void this.#send();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#heartbeat);
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    void this.#connect();
  }

  async #send(): Promise<void> {
    const client = this.#client;
    // Not listening now: nothing to send on, and the other processes' polls find the events.
    if (!client) return;
    if (this.#sending) {
      this.#sendAgain = true;
      return;
    }
    this.#sending = true;
    try {
      await run(client, SQL.notify, []);
    } catch {
      // The connection's own error or end handler opens a new one.
    } finally {
      this.#sending = false;
    }
    if (this.#sendAgain) {
      this.#sendAgain = false;
      void this.#send();
    }
  }

  async #connect(): Promise<void> {
    const client = createListenClient(this.config);
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      this.#lost(client);
    };
    client.on('error', onLost).on('end', onLost);
    client.on('notification', (n) => {
      if (n.channel === CHANNEL && n.processId !== this.#pid) this.#tell();
    });
    try {
      await client.connect();
      // A standby cannot LISTEN, and would hear nothing the primary's writers say.
      await assertWritable(client);
      const { rows } = await run(client, SQL.backendPid, []);
      await run(client, SQL.listen, []);
      this.#pid = rows[0]!.pid;
    } catch {
      onLost();
      return;
    }
    if (this.#closed || lost) {
      if (!lost) await client.end().catch(() => {});
      return;
    }
    this.#client = client;
    this.#retryMs = RETRY_MIN_MS;
    this.#heartbeat = setInterval(() => {
      if (!this.#sending) run(client, SQL.heartbeat, []).catch(onLost);
    }, HEARTBEAT_MS).unref();
    // Words sent before this connection listened were not heard.
    this.#tell();
  }

  #lost(client: pg.Client): void {
    client.removeAllListeners('notification');
    // end() on a broken connection may report the break again.
    client.on('error', () => {});
    void client.end().catch(() => {});
    if (this.#client === client) {
      this.#client = undefined;
      clearInterval(this.#heartbeat);
    }
    if (this.#closed) return;
    this.#retry = setTimeout(() => void this.#connect(), this.#retryMs).unref();
    this.#retryMs = Math.min(this.#retryMs * 2, RETRY_MAX_MS);
  }

  #tell(): void {
    for (const listener of this.#listeners) listener();
  }
}
