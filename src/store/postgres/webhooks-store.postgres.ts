import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type {
  ClaimOptions,
  ClaimedDelivery,
  DeliverySettlement,
  OutboxStore,
  WebhookEndpointRecord,
  WebhookEventType,
  WebhookStore,
} from '../store.js';
import { withClient, writeWithClient } from './db-connect.postgres.js';

interface EndpointRow {
  id: string;
  owner: string;
  url: string;
  events: string;
  key_id: string;
  created_at: Date;
  disabled_at: Date | null;
  disabled_reason: string | null;
  pending: bigint;
}

interface ClaimRow {
  event_id: string;
  endpoint_id: string;
  type: WebhookEventType;
  plant_id: bigint;
  name: string | null;
  tag: string | null;
  occurred_at: bigint;
  attempts: number;
  url: string;
  secret: Buffer;
}

const INSERT = {
  name: 'webhooks_insert',
  text: `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at)
    VALUES ($1::text, $2::text, $3::text, $4::text, $5::bytea, $6::text, $7::timestamptz)`,
} as const;
const ALL = {
  name: 'webhooks_all',
  text: `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason,
      (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id) AS pending
    FROM webhook_endpoints e ORDER BY created_at, id`,
} as const;
// The foreign key's ON DELETE CASCADE removes the endpoint's waiting events.
const REMOVE = { name: 'webhooks_remove', text: 'DELETE FROM webhook_endpoints WHERE id = $1::text' } as const;

/**
 * Each instance claims the oldest due rows of each endpoint it is not busy
 * with. FOR UPDATE SKIP LOCKED lets instances claiming at the same moment
 * pass over each other's rows instead of waiting; moving next_attempt_at past
 * the lease keeps the rows from every later claim until they are settled or
 * the lease runs out (the claimer died).
 */
const CLAIM = {
  name: 'outbox_claim',
  text: `WITH picked AS (
      SELECT d.event_id
      FROM (SELECT id FROM webhook_endpoints
            WHERE key_id = $1::text AND disabled_at IS NULL AND NOT (id = ANY ($2::text[]))) e
      CROSS JOIN LATERAL (
        SELECT event_id, next_attempt_at, occurred_at FROM webhook_deliveries
        WHERE endpoint_id = e.id AND next_attempt_at <= now()
        ORDER BY next_attempt_at, occurred_at
        LIMIT $3::int
        FOR UPDATE SKIP LOCKED
      ) d
      ORDER BY d.next_attempt_at, d.occurred_at
      LIMIT $4::int
    )
    UPDATE webhook_deliveries d
    SET attempts = d.attempts + 1, next_attempt_at = now() + $5::int8 * interval '1 millisecond', claim = $6::text
    FROM picked, webhook_endpoints e
    WHERE d.event_id = picked.event_id AND e.id = d.endpoint_id
    RETURNING d.event_id, d.endpoint_id, d.type, d.plant_id, d.name, d.tag,
      floor(extract(epoch FROM d.occurred_at) * 1000)::int8 AS occurred_at, d.attempts, e.url, e.secret`,
} as const;
const DELIVERED = {
  name: 'outbox_delivered',
  text: 'DELETE FROM webhook_deliveries WHERE event_id = $1::text AND claim = $2::text',
} as const;
const RETRY = {
  name: 'outbox_retry',
  text: `UPDATE webhook_deliveries
    SET next_attempt_at = now() + $3::int8 * interval '1 millisecond', claim = NULL, last_error = $4::text
    WHERE event_id = $1::text AND claim = $2::text`,
} as const;
const RELEASE = {
  name: 'outbox_release',
  text: `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = now(), claim = NULL
    WHERE event_id = $1::text AND claim = $2::text`,
} as const;
const DISABLE = {
  name: 'outbox_disable',
  text: `WITH disabled AS (
      UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2::text
      WHERE id = $1::text AND disabled_at IS NULL RETURNING id
    ), dropped AS (
      DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM disabled)
    )
    SELECT count(*)::int AS disabled FROM disabled`,
} as const;

export class PostgresWebhookStore implements WebhookStore {
  constructor(private readonly pool: pg.Pool) {}

  async add(e: WebhookEndpointRecord, sealedSecret: Buffer): Promise<void> {
    const values = [e.id, e.owner, e.url, e.events.join(' '), sealedSecret, e.keyId, e.createdAt];
    await writeWithClient(this.pool, (client) => client.query({ ...INSERT, values }));
  }

  async list(): Promise<(WebhookEndpointRecord & { pending: number })[]> {
    const { rows } = await withClient(this.pool, (client) => client.query<EndpointRow>(ALL));
    return rows.map((row) => ({
      id: row.id,
      owner: row.owner,
      url: row.url,
      events: row.events.split(' ') as WebhookEventType[],
      createdAt: row.created_at,
      keyId: row.key_id,
      disabledAt: row.disabled_at ?? undefined,
      disabledReason: row.disabled_reason ?? undefined,
      pending: Number(row.pending),
    }));
  }

  async remove(id: string): Promise<boolean> {
    const { rowCount } = await writeWithClient(this.pool, (client) => client.query({ ...REMOVE, values: [id] }));
    return rowCount === 1;
  }
}

export class PostgresOutboxStore implements OutboxStore {
  constructor(private readonly pool: pg.Pool) {}

  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    const claim = randomBytes(12).toString('base64url');
    const values = [o.keyId, [...o.exclude], o.perEndpoint, o.limit, o.leaseMs, claim];
    const { rows } = await writeWithClient(this.pool, (client) => client.query<ClaimRow>({ ...CLAIM, values }));
    return rows
      .map((r) => ({
        ref: r.event_id,
        eventId: r.event_id,
        endpointId: r.endpoint_id,
        url: r.url,
        sealedSecret: r.secret,
        type: r.type,
        plantId: r.plant_id,
        name: r.name,
        tag: r.tag,
        occurredAt: Number(r.occurred_at),
        attempt: r.attempts,
        claim,
      }))
      .sort((a, b) => a.occurredAt - b.occurredAt);
  }

  async settle(d: ClaimedDelivery, s: DeliverySettlement): Promise<boolean> {
    const key = [d.ref, d.claim];
    const query =
      s.kind === 'delivered' || s.kind === 'drop'
        ? { ...DELIVERED, values: key }
        : s.kind === 'retry'
          ? { ...RETRY, values: [...key, Math.round(s.delayMs), s.error] }
          : { ...RELEASE, values: key };
    const { rowCount } = await writeWithClient(this.pool, (client) => client.query(query));
    return rowCount === 1;
  }

  async disableEndpoint(endpointId: string, reason: string): Promise<boolean> {
    const { rows } = await writeWithClient(this.pool, (client) =>
      client.query<{ disabled: number }>({ ...DISABLE, values: [endpointId, reason] }),
    );
    return rows[0]?.disabled === 1;
  }
}
