import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import {
  TooManyEndpointsError,
  type ClaimEnd,
  type ClaimOptions,
  type ClaimedDelivery,
  type DeliverySettlement,
  type OutboxStore,
  type WebhookEndpointRecord,
  type WebhookEventType,
  type WebhookStore,
} from '../store.js';
import type { WriterThread } from './writer-thread.js';
import type { SqliteRow } from './tables.sqlite.js';
import { operation } from '../operation.js';
import { prepareAll, type Prepared } from './db-connect.sqlite.js';

type Endpoint = SqliteRow<'webhook_endpoints'>;
type EndpointRow = Pick<
  Endpoint,
  'id' | 'owner' | 'url' | 'events' | 'key_id' | 'created_at' | 'disabled_at' | 'disabled_reason' | 'pending'
>;

const toRecord = (row: EndpointRow): WebhookEndpointRecord & { pending: number } => ({
  id: row.id,
  owner: row.owner,
  url: row.url,
  events: row.events.split(' ') as WebhookEventType[],
  createdAt: new Date(row.created_at),
  keyId: row.key_id,
  disabledAt: row.disabled_at === null ? undefined : new Date(row.disabled_at),
  disabledReason: row.disabled_reason ?? undefined,
  pending: row.pending,
});

type NewEndpoint = [
  id: string,
  owner: string,
  url: string,
  events: string,
  secret: Buffer,
  keyId: string,
  createdAt: number,
  owner: string,
  max: number,
];

// The webhook endpoints' operations and the outbox's poll; claims and
// settlements are writes of the writer thread (outbox-writes.sqlite.ts).
// Locks: a write here is a statement (or, for redeliver, an IMMEDIATE
// transaction) on the main thread's connection, holding SQLite's write lock
// while it runs, waiting up to busy_timeout while another connection holds
// it. Reads take none (a WAL snapshot).
const SQL = {
  /**
   * The count and the insert are one statement, so under one write lock:
   * two adds at once cannot both pass the cap. The endpoint gets the events
   * logged after it (one writer: none can appear below the newest).
   */
  add: operation<NewEndpoint>(
    'webhooks_insert',
    `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at, from_event)
     SELECT ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(id), 0) FROM plant_events)
     WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = ? AND disabled_at IS NULL) < ?`,
  ),
  all: operation<[], EndpointRow>(
    'webhooks_all',
    `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending
     FROM webhook_endpoints ORDER BY created_at, id`,
  ),
  /** The foreign key's ON DELETE CASCADE removes the endpoint's waiting events. */
  remove: operation<[id: string]>('webhooks_remove', 'DELETE FROM webhook_endpoints WHERE id = ?'),
  get: operation<[id: string], EndpointRow & Pick<Endpoint, 'secret'>>(
    'webhooks_get',
    `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending, secret
     FROM webhook_endpoints WHERE id = ?`,
  ),
  // redeliver: three statements in one IMMEDIATE transaction, which takes
  // the write lock first, so a claim cannot settle between them.
  endpointActive: operation<[id: string], number>(
    'webhooks_endpoint_active',
    'SELECT disabled_at IS NULL FROM webhook_endpoints WHERE id = ?',
    { rowMode: 'value' },
  ),
  /** Due at once, before the newer deliveries, in the order they were fanned out (claims go by next_attempt_at, seq). */
  requeueFailed: operation<[id: string]>(
    'webhooks_requeue_failed',
    `UPDATE webhook_deliveries SET failed_at = NULL, attempts = 0, next_attempt_at = 0, claim = NULL
     WHERE endpoint_id = ? AND failed_at IS NOT NULL`,
  ),
  /** A claim in progress keeps its lease; it ends it as usual, and the queued deliveries are due at the next. */
  countRequeued: operation<[n: number, now: number, id: string]>(
    'webhooks_count_requeued',
    `UPDATE webhook_endpoints SET pending = pending + ?,
       retry_at = CASE WHEN claim IS NULL THEN min(retry_at, ?) ELSE retry_at END, failures = 0
     WHERE id = ?`,
  ),
  /**
   * Events logged since the last fan-out are worth a claim when an endpoint
   * could want them. Endpoints waiting out a backoff or held by a claim are
   * not due, so their waiting events cost a poll nothing (the partial index
   * webhook_endpoints_due). A read: only a due row is worth the write lock.
   */
  anyDue: operation<[now: number], number>(
    'outbox_any_due',
    `SELECT ((SELECT max(id) FROM plant_events) > (SELECT up_to FROM webhook_fan_out)
         AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL))
       OR EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL AND pending > 0 AND retry_at <= ?)`,
    { rowMode: 'value' },
  ),
};

export class SqliteWebhookStore implements WebhookStore {
  readonly #sql: Prepared<typeof SQL>;
  readonly #redeliver: Database.Transaction<(id: string) => number | undefined>;

  constructor(db: Database.Database) {
    const sql = (this.#sql = prepareAll(db, SQL));
    this.#redeliver = db.transaction((id: string): number | undefined => {
      const state = sql.endpointActive.get(id);
      if (state === undefined) return undefined;
      // A disabled endpoint's deliveries were all dropped when it was disabled.
      if (state !== 1) return 0;
      const n = sql.requeueFailed.run(id).changes;
      if (n > 0) sql.countRequeued.run(n, Date.now(), id);
      return n;
    });
  }

  async redeliver(id: string): Promise<number | undefined> {
    return this.#redeliver.immediate(id);
  }

  async get(id: string): Promise<{ endpoint: WebhookEndpointRecord; sealedSecret: Buffer } | undefined> {
    const row = this.#sql.get.get(id);
    if (row === undefined) return undefined;
    const { pending: _pending, ...endpoint } = toRecord(row);
    return { endpoint, sealedSecret: row.secret };
  }

  async add(e: WebhookEndpointRecord, sealedSecret: Buffer, limits?: { maxPerOwner: number }): Promise<void> {
    const maxPerOwner = limits?.maxPerOwner ?? Number.MAX_SAFE_INTEGER;
    const { changes } = this.#sql.add.run(
      e.id,
      e.owner,
      e.url,
      e.events.join(' '),
      sealedSecret,
      e.keyId,
      e.createdAt.getTime(),
      e.owner,
      maxPerOwner,
    );
    if (changes !== 1) throw new TooManyEndpointsError(e.owner, maxPerOwner);
  }

  async list(): Promise<(WebhookEndpointRecord & { pending: number })[]> {
    return this.#sql.all.all().map(toRecord);
  }

  async remove(id: string): Promise<boolean> {
    return this.#sql.remove.run(id).changes === 1;
  }
}

export class SqliteOutboxStore implements OutboxStore {
  readonly #anyDue: Database.Statement<[number], number>;

  /** Claims and settlements are writes, so they go to the writer thread; the cheap "anything due?" read stays here. */
  constructor(
    db: Database.Database,
    private readonly writer: WriterThread,
  ) {
    this.#anyDue = prepareAll(db, { anyDue: SQL.anyDue }).anyDue;
  }

  async claim(options: ClaimOptions): Promise<ClaimedDelivery[]> {
    const now = Date.now();
    // Polling is a read; only a due row is worth taking the write lock for.
    if (this.#anyDue.get(now) !== 1) return [];
    const claim = randomBytes(12).toString('base64url');
    const rows = await this.writer.run({
      kind: 'outbox-claim',
      options: { ...options, exclude: [...options.exclude], busyOwners: new Map(options.busyOwners) },
      now,
      claim,
    });
    return rows.map((r) => ({
      ref: r.seq.toString(),
      eventId: r.eventId,
      endpointId: r.endpointId,
      owner: r.owner,
      url: r.url,
      sealedSecret: Buffer.from(r.secret),
      endpointFailures: r.failures,
      type: r.type,
      plantId: r.plantId,
      name: r.name,
      tag: r.tag,
      occurredAt: r.occurredAt,
      attempt: r.attempts,
      claim,
    }));
  }

  settle(d: ClaimedDelivery, settlement: DeliverySettlement): Promise<boolean> {
    return this.writer.run({ kind: 'outbox-settle', seq: BigInt(d.ref), claim: d.claim, settlement, now: Date.now() });
  }

  endClaim(endpointId: string, claim: string, end: ClaimEnd): Promise<boolean> {
    return this.writer.run({ kind: 'outbox-end', endpointId, claim, end, now: Date.now() });
  }

  disableEndpoint(endpointId: string, reason: string): Promise<boolean> {
    return this.writer.run({ kind: 'outbox-disable', endpointId, reason, now: Date.now() });
  }
}
