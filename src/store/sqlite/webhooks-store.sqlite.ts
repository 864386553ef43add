import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type {
  ClaimOptions,
  ClaimedDelivery,
  DeliverySettlement,
  OutboxStore,
  WebhookEndpointRecord,
  WebhookEventType,
  WebhookStore,
} from '../store.js';
import type { WriterThread } from './writer-thread.js';

interface EndpointRow {
  id: string;
  owner: string;
  url: string;
  events: string;
  key_id: string;
  created_at: number;
  disabled_at: number | null;
  disabled_reason: string | null;
  pending: number;
}

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
  readonly #insert: Database.Statement<[string, string, string, string, Buffer, string, number]>;
  readonly #all: Database.Statement<[], EndpointRow>;
  readonly #remove: Database.Statement<[string]>;

  constructor(db: Database.Database) {
    this.#insert = db.prepare(
      'INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.#all = db.prepare(
      `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason,
         (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id) AS pending
       FROM webhook_endpoints e ORDER BY created_at, id`,
    );
    // The foreign key's ON DELETE CASCADE removes the endpoint's waiting events.
    this.#remove = db.prepare('DELETE FROM webhook_endpoints WHERE id = ?');
  }

  async add(e: WebhookEndpointRecord, sealedSecret: Buffer): Promise<void> {
    this.#insert.run(e.id, e.owner, e.url, e.events.join(' '), sealedSecret, e.keyId, e.createdAt.getTime());
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
    this.#anyDue = db
      .prepare<[number], number>('SELECT 1 FROM webhook_deliveries WHERE next_attempt_at <= ? LIMIT 1')
      .pluck();
  }

  async claim(options: ClaimOptions): Promise<ClaimedDelivery[]> {
    const now = Date.now();
    // Polling is a read; only a due row is worth taking the write lock for.
    if (this.#anyDue.get(now) === undefined) return [];
    const claim = randomBytes(12).toString('base64url');
    const rows = await this.writer.run({
      kind: 'outbox-claim',
      options: { ...options, exclude: [...options.exclude] },
      now,
      claim,
    });
    return rows.map((r) => ({
      ref: r.seq.toString(),
      eventId: r.eventId,
      endpointId: r.endpointId,
      url: r.url,
      sealedSecret: Buffer.from(r.secret),
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

  disableEndpoint(endpointId: string, reason: string): Promise<boolean> {
    return this.writer.run({ kind: 'outbox-disable', endpointId, reason, now: Date.now() });
  }
}
