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

export class SqliteWebhookStore implements WebhookStore {
  readonly #insert: Database.Statement<[string, string, string, string, Buffer, string, number, string, number]>;
  readonly #all: Database.Statement<[], EndpointRow>;
  readonly #remove: Database.Statement<[string]>;
  readonly #get: Database.Statement<[string], EndpointRow & Pick<Endpoint, 'secret'>>;
  readonly #redeliver: Database.Transaction<(id: string) => number | undefined>;

  constructor(db: Database.Database) {
    // The count and the insert are one statement: two adds at once cannot both pass the cap.
    // The endpoint gets the events logged after it (one writer: none can appear below the newest).
    this.#insert = db.prepare(
      `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at, from_event)
       SELECT ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(id), 0) FROM plant_events)
       WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = ? AND disabled_at IS NULL) < ?`,
    );
    this.#all = db.prepare(
      `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending
       FROM webhook_endpoints ORDER BY created_at, id`,
    );
    // The foreign key's ON DELETE CASCADE removes the endpoint's waiting events.
    this.#remove = db.prepare('DELETE FROM webhook_endpoints WHERE id = ?');
    this.#get = db.prepare(
      `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending, secret
       FROM webhook_endpoints WHERE id = ?`,
    );
    const active = db
      .prepare<[string], number>('SELECT disabled_at IS NULL FROM webhook_endpoints WHERE id = ?')
      .pluck();
    // Due at once, before the newer deliveries, in the order they were fanned out (claims go by next_attempt_at, seq).
    const requeue = db.prepare<[string]>(
      `UPDATE webhook_deliveries SET failed_at = NULL, attempts = 0, next_attempt_at = 0, claim = NULL
       WHERE endpoint_id = ? AND failed_at IS NOT NULL`,
    );
    // A claim in progress keeps its lease; it ends it as usual, and the queued deliveries are due at the next.
    const countIn = db.prepare<[number, number, string]>(
      `UPDATE webhook_endpoints SET pending = pending + ?,
         retry_at = CASE WHEN claim IS NULL THEN min(retry_at, ?) ELSE retry_at END, failures = 0
       WHERE id = ?`,
    );
    // One IMMEDIATE transaction: the write lock first, so a claim cannot settle between the two statements.
    this.#redeliver = db.transaction((id: string): number | undefined => {
      const state = active.get(id);
      if (state === undefined) return undefined;
      // A disabled endpoint's deliveries were all dropped when it was disabled.
      if (state !== 1) return 0;
      const n = requeue.run(id).changes;
      if (n > 0) countIn.run(n, Date.now(), id);
      return n;
    });
  }

  async redeliver(id: string): Promise<number | undefined> {
    return this.#redeliver.immediate(id);
  }

  async get(id: string): Promise<{ endpoint: WebhookEndpointRecord; sealedSecret: Buffer } | undefined> {
    const row = this.#get.get(id);
    if (row === undefined) return undefined;
    const { pending: _pending, ...endpoint } = toRecord(row);
    return { endpoint, sealedSecret: row.secret };
  }

  async add(e: WebhookEndpointRecord, sealedSecret: Buffer, limits?: { maxPerOwner: number }): Promise<void> {
    const maxPerOwner = limits?.maxPerOwner ?? Number.MAX_SAFE_INTEGER;
    const { changes } = this.#insert.run(
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
    return this.#all.all().map(toRecord);
  }

  async remove(id: string): Promise<boolean> {
    return this.#remove.run(id).changes === 1;
  }
}

export class SqliteOutboxStore implements OutboxStore {
  readonly #anyDue: Database.Statement<[number], number>;

  /** Claims and settlements are writes, so they go to the writer thread; the cheap "anything due?" read stays here. */
  constructor(
    db: Database.Database,
    private readonly writer: WriterThread,
  ) {
    // Events logged since the last fan-out are worth a claim when an endpoint
    // could want them. Endpoints waiting out a backoff or held by a claim are
    // not due, so their waiting events cost a poll nothing (the partial index
    // webhook_endpoints_due).
    this.#anyDue = db
      .prepare<[number], number>(
        `SELECT ((SELECT max(id) FROM plant_events) > (SELECT up_to FROM webhook_fan_out)
             AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL))
           OR EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL AND pending > 0 AND retry_at <= ?)`,
      )
      .pluck();
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
