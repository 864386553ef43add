import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import {
  TooManyEndpointsError,
  tooManyPendingReason,
  type ClaimEnd,
  type ClaimOptions,
  type ClaimedDelivery,
  type DeliverySettlement,
  type OutboxStore,
  type WebhookEndpointRecord,
  type WebhookEventType,
  type WebhookStore,
} from '../store.js';
import { inTransaction, withClient, writeWithClient } from './db-connect.postgres.js';
import { READABLE } from './event-log.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

type Endpoint = PostgresRow<'webhook_endpoints'>;
type EndpointRow = Pick<
  Endpoint,
  'id' | 'owner' | 'url' | 'events' | 'key_id' | 'created_at' | 'disabled_at' | 'disabled_reason' | 'pending'
>;
type ClaimRow = Pick<PostgresRow<'webhook_deliveries'>, 'event_id' | 'endpoint_id' | 'event' | 'attempts'>;
/** A claimed delivery's event, occurred_at in milliseconds since the epoch. */
type EventRow = Pick<PostgresRow<'plant_events'>, 'id' | 'type' | 'plant_id' | 'name' | 'tag'> & {
  occurred_at: bigint;
};
type LeasedEndpoint = Pick<Endpoint, 'id' | 'owner' | 'url' | 'secret' | 'failures'>;

// The cap and the insert under one lock per owner: two adds at once cannot both pass it.
const OWNER_LOCK = {
  name: 'webhooks_owner_lock',
  text: "SELECT pg_advisory_xact_lock(hashtextextended('plant-store webhooks ' || $1::text, 0))",
} as const;
const INSERT = {
  name: 'webhooks_insert',
  text: `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at, from_event)
    SELECT $1::text, $2::text, $3::text, $4::text, $5::bytea, $6::text, $7::timestamptz,
      (SELECT coalesce(max(id), 0) FROM plant_events)
    WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = $2::text AND disabled_at IS NULL) < $8::int8`,
} as const;
const ALL = {
  name: 'webhooks_all',
  text: `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending
    FROM webhook_endpoints e ORDER BY created_at, id`,
} as const;
// The foreign key's ON DELETE CASCADE removes the endpoint's waiting events.
const REMOVE = { name: 'webhooks_remove', text: 'DELETE FROM webhook_endpoints WHERE id = $1::text' } as const;
const GET = {
  name: 'webhooks_get',
  text: `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending, secret
    FROM webhook_endpoints WHERE id = $1::text`,
} as const;

// Events of the log one fan-out step passes at most; a claim takes steps
// until it has made FAN_OUT_DELIVERIES deliveries or passed FAN_OUT_STEPS
// steps, so that each statement and each claim stay short.
const FAN_OUT_EVENTS = 1024;
const FAN_OUT_STEPS = 16;
const FAN_OUT_DELIVERIES = 4096;
/**
 * One step of the fan-out: gives the readable events after the position to
 * the endpoints subscribed (active, of the event's owner, listing its type,
 * registered before it), counts them in each endpoint's pending, moves the
 * position, and answers where to and the endpoints now past the bound. With
 * no active endpoint the position moves to the newest readable event at
 * once. The position's row is locked (SKIP LOCKED: an instance fanning out
 * meanwhile has it, and this one does nothing), so each event is fanned out
 * once. Driven from the endpoints: each reads its owner's events of the step
 * (a range of plant_events_owner_id).
 */
const FAN_OUT = {
  name: 'outbox_fan_out',
  text: `WITH pos AS (
      SELECT up_to FROM webhook_fan_out FOR UPDATE SKIP LOCKED
    ), step AS (
      SELECT CASE WHEN EXISTS (SELECT FROM webhook_endpoints WHERE disabled_at IS NULL)
        THEN (SELECT max(id) FROM (
          SELECT id FROM plant_events WHERE id > (SELECT up_to FROM pos) AND id < ${READABLE}
          ORDER BY id LIMIT ${FAN_OUT_EVENTS}) AS s)
        ELSE (SELECT max(id) FROM plant_events WHERE id > (SELECT up_to FROM pos) AND id < ${READABLE})
      END AS to_id
    ), ins AS (
      INSERT INTO webhook_deliveries (event_id, endpoint_id, event, next_attempt_at)
      SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, ev.id, ev.occurred_at
      FROM webhook_endpoints e JOIN plant_events ev ON ev.owner = e.owner
      WHERE e.disabled_at IS NULL AND ev.id > (SELECT up_to FROM pos) AND ev.id <= (SELECT to_id FROM step)
        AND ev.id > e.from_event AND ev.type = ANY (string_to_array(e.events, ' '))
      RETURNING endpoint_id
    ), moved AS (
      UPDATE webhook_fan_out SET up_to = (SELECT to_id FROM step)
      WHERE EXISTS (SELECT FROM pos) AND (SELECT to_id FROM step) IS NOT NULL
      RETURNING up_to
    ), counted AS (
      UPDATE webhook_endpoints e SET pending = e.pending + n.added
      FROM (SELECT endpoint_id, count(*) AS added FROM ins GROUP BY endpoint_id) n
      WHERE e.id = n.endpoint_id
      RETURNING e.id, e.pending
    )
    SELECT (SELECT count(*) FROM moved)::int AS moved, (SELECT count(*) FROM ins)::int AS added,
      coalesce((SELECT array_agg(id) FROM counted WHERE pending > $1::int8), '{}') AS overfull`,
} as const;
/**
 * Leases the endpoints that are due (waiting longest first), at most
 * $perOwner of an owner counting those the caller is busy with already.
 * SKIP LOCKED: instances claiming at once pass over each other's endpoints;
 * retry_at moved past the lease keeps the endpoint from every later claim
 * until the claim ends or the lease runs out (the claimer died).
 */
const LEASE_ENDPOINTS = {
  name: 'outbox_lease_endpoints',
  text: `WITH busy AS (
      SELECT * FROM unnest($3::text[], $4::int[]) AS b(owner, n)
    ), due AS (
      SELECT e.id, e.owner, e.retry_at FROM webhook_endpoints e
      WHERE e.disabled_at IS NULL AND e.pending > 0 AND e.retry_at <= now() AND e.key_id = $1::text
        AND NOT (e.id = ANY ($2::text[]))
      FOR UPDATE SKIP LOCKED
    ), ranked AS (
      SELECT due.id, due.retry_at, row_number() OVER (PARTITION BY due.owner ORDER BY due.retry_at, due.id)
        + coalesce(busy.n, 0) AS place
      FROM due LEFT JOIN busy ON busy.owner = due.owner
    ), chosen AS (
      SELECT id FROM ranked WHERE place <= $5::int ORDER BY retry_at, id LIMIT $6::int
    )
    UPDATE webhook_endpoints e SET retry_at = now() + $7::int8 * interval '1 millisecond', claim = $8::text
    FROM chosen WHERE e.id = chosen.id
    RETURNING e.id, e.owner, e.url, e.secret, e.failures`,
} as const;
const CLAIM_ROWS = {
  name: 'outbox_claim_rows',
  text: `WITH picked AS (
      SELECT d.event_id
      FROM unnest($1::text[]) AS e(id)
      CROSS JOIN LATERAL (
        SELECT event_id FROM webhook_deliveries
        WHERE endpoint_id = e.id AND next_attempt_at <= now()
        ORDER BY next_attempt_at, event
        LIMIT $2::int
        FOR UPDATE SKIP LOCKED
      ) d
    )
    UPDATE webhook_deliveries d
    SET attempts = d.attempts + 1, next_attempt_at = now() + $3::int8 * interval '1 millisecond', claim = $4::text
    FROM picked WHERE d.event_id = picked.event_id
    RETURNING d.event_id, d.endpoint_id, d.event, d.attempts`,
} as const;
// The claimed deliveries' events, read from the log, which keeps every event a delivery refers to.
const EVENTS = {
  name: 'outbox_claimed_events',
  text: `SELECT id, type, plant_id, name, tag, floor(extract(epoch FROM occurred_at) * 1000)::int8 AS occurred_at
    FROM plant_events WHERE id = ANY ($1::int8[])`,
} as const;
// Leased endpoints whose events all wait for their own retry: not worth a look before then.
const PARK = {
  name: 'outbox_park',
  text: `UPDATE webhook_endpoints e
    SET retry_at = coalesce(
        (SELECT min(next_attempt_at) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.failed_at IS NULL),
        now()
      ),
      claim = NULL
    WHERE e.id = ANY ($1::text[]) AND e.claim = $2::text`,
} as const;
const DELIVERED = {
  name: 'outbox_delivered',
  text: `WITH gone AS (
      DELETE FROM webhook_deliveries WHERE event_id = $1::text AND claim = $2::text RETURNING endpoint_id
    ), counted AS (
      UPDATE webhook_endpoints e SET pending = e.pending - 1 FROM gone WHERE e.id = gone.endpoint_id
    )
    SELECT count(*)::int AS settled FROM gone`,
} as const;
const RETRY = {
  name: 'outbox_retry',
  text: `UPDATE webhook_deliveries
    SET next_attempt_at = now() + $3::int8 * interval '1 millisecond', claim = NULL, last_error = $4::text
    WHERE event_id = $1::text AND claim = $2::text`,
} as const;
// Given up: kept, with its next attempt at 'infinity' (no claim's range reaches it), for redeliver.
const GIVE_UP = {
  name: 'outbox_give_up',
  text: `WITH failed AS (
      UPDATE webhook_deliveries SET failed_at = now(), next_attempt_at = 'infinity', claim = NULL, last_error = $3::text
      WHERE event_id = $1::text AND claim = $2::text RETURNING endpoint_id
    ), counted AS (
      UPDATE webhook_endpoints e SET pending = e.pending - 1 FROM failed WHERE e.id = failed.endpoint_id
    )
    SELECT count(*)::int AS settled FROM failed`,
} as const;
/**
 * The endpoint's failed deliveries queued again in one statement: due at
 * once, before the newer ones, in the order of their events; counted in, and the endpoint's backoff
 * ended unless a claim holds it (that claim ends it as usual). A disabled
 * endpoint has none: its deliveries were dropped when it was disabled.
 */
const REDELIVER = {
  name: 'webhooks_redeliver',
  text: `WITH endpoint AS (
      SELECT id, disabled_at IS NULL AS active FROM webhook_endpoints WHERE id = $1::text
    ), requeued AS (
      UPDATE webhook_deliveries d
      SET failed_at = NULL, attempts = 0, next_attempt_at = '-infinity', claim = NULL
      WHERE d.endpoint_id = $1::text AND d.failed_at IS NOT NULL AND (SELECT active FROM endpoint)
      RETURNING 1
    ), counted AS (
      UPDATE webhook_endpoints e
      SET pending = e.pending + (SELECT count(*) FROM requeued),
        retry_at = CASE WHEN e.claim IS NULL THEN LEAST(e.retry_at, now()) ELSE e.retry_at END,
        failures = 0
      WHERE e.id = $1::text AND EXISTS (SELECT FROM requeued)
    )
    SELECT (SELECT count(*) FROM endpoint)::int AS found, (SELECT count(*) FROM requeued)::int AS n`,
} as const;
const RELEASE = {
  name: 'outbox_release',
  text: `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = now(), claim = NULL
    WHERE event_id = $1::text AND claim = $2::text`,
} as const;
const END_CLAIM = {
  name: 'outbox_end_claim',
  text: `UPDATE webhook_endpoints
    SET retry_at = now() + $3::int8 * interval '1 millisecond',
      failures = CASE $4::text WHEN 'done' THEN 0 WHEN 'failed' THEN failures + 1 ELSE failures END,
      claim = NULL
    WHERE id = $1::text AND claim = $2::text`,
} as const;
const DISABLE = {
  name: 'outbox_disable',
  text: `WITH disabled AS (
      UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2::text, pending = 0, claim = NULL
      WHERE id = $1::text AND disabled_at IS NULL RETURNING id
    ), dropped AS (
      DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM disabled)
    )
    SELECT count(*)::int AS disabled FROM disabled`,
} as const;

const toRecord = (row: EndpointRow): WebhookEndpointRecord => ({
  id: row.id,
  owner: row.owner,
  url: row.url,
  events: row.events.split(' ') as WebhookEventType[],
  createdAt: row.created_at,
  keyId: row.key_id,
  disabledAt: row.disabled_at ?? undefined,
  disabledReason: row.disabled_reason ?? undefined,
});

export class PostgresWebhookStore implements WebhookStore {
  constructor(private readonly pool: pg.Pool) {}

  async add(e: WebhookEndpointRecord, sealedSecret: Buffer, limits?: { maxPerOwner: number }): Promise<void> {
    const max = limits?.maxPerOwner ?? Number.MAX_SAFE_INTEGER;
    const values = [e.id, e.owner, e.url, e.events.join(' '), sealedSecret, e.keyId, e.createdAt, max];
    const added = await writeWithClient(this.pool, (client) =>
      inTransaction(client, async () => {
        await client.query({ ...OWNER_LOCK, values: [e.owner] });
        return (await client.query({ ...INSERT, values })).rowCount === 1;
      }),
    );
    if (!added) throw new TooManyEndpointsError(e.owner, max);
  }

  async list(): Promise<(WebhookEndpointRecord & { pending: number })[]> {
    const { rows } = await withClient(this.pool, (client) => client.query<EndpointRow>(ALL));
    return rows.map((row) => ({ ...toRecord(row), pending: row.pending }));
  }

  async get(id: string): Promise<{ endpoint: WebhookEndpointRecord; sealedSecret: Buffer } | undefined> {
    const { rows } = await withClient(this.pool, (client) =>
      client.query<EndpointRow & Pick<Endpoint, 'secret'>>({ ...GET, values: [id] }),
    );
    return rows[0] && { endpoint: toRecord(rows[0]), sealedSecret: rows[0].secret };
  }

  async remove(id: string): Promise<boolean> {
    const { rowCount } = await writeWithClient(this.pool, (client) => client.query({ ...REMOVE, values: [id] }));
    return rowCount === 1;
  }

  async redeliver(id: string): Promise<number | undefined> {
    const { rows } = await writeWithClient(this.pool, (client) =>
      client.query<{ found: number; n: number }>({ ...REDELIVER, values: [id] }),
    );
    return rows[0]!.found === 0 ? undefined : rows[0]!.n;
  }
}

export class PostgresOutboxStore implements OutboxStore {
  constructor(private readonly pool: pg.Pool) {}

  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    let added = 0;
    for (let step = 0; step < FAN_OUT_STEPS && added < FAN_OUT_DELIVERIES; step++) {
      const { rows } = await writeWithClient(this.pool, (client) =>
        client.query<{ moved: number; added: number; overfull: string[] }>({ ...FAN_OUT, values: [o.maxPending] }),
      );
      for (const id of rows[0]!.overfull) {
        await this.disableEndpoint(id, tooManyPendingReason(o.maxPending, new Date()));
      }
      if (rows[0]!.moved === 0) break;
      added += rows[0]!.added;
    }
    const claim = randomBytes(12).toString('base64url');
    const owners = [...o.busyOwners.keys()];
    const counts = owners.map((owner) => o.busyOwners.get(owner)!);
    const rows = await writeWithClient(this.pool, (client) =>
      inTransaction(client, async () => {
        const leased = await client.query<LeasedEndpoint>({
          ...LEASE_ENDPOINTS,
          values: [o.keyId, [...o.exclude], owners, counts, o.perOwner, o.limit, o.leaseMs, claim],
        });
        if (leased.rows.length === 0) return [];
        const endpoints = new Map(leased.rows.map((e) => [e.id, e]));
        const claimed = await client.query<ClaimRow>({
          ...CLAIM_ROWS,
          values: [[...endpoints.keys()], o.perEndpoint, o.leaseMs, claim],
        });
        const idle = [...endpoints.keys()].filter((id) => !claimed.rows.some((r) => r.endpoint_id === id));
        if (idle.length > 0) await client.query({ ...PARK, values: [idle, claim] });
        if (claimed.rows.length === 0) return [];
        const events = await client.query<EventRow>({
          ...EVENTS,
          values: [[...new Set(claimed.rows.map((r) => r.event.toString()))]],
        });
        const byId = new Map(events.rows.map((ev) => [ev.id.toString(), ev]));
        return claimed.rows.map((r) => ({
          row: { ...r, ...byId.get(r.event.toString())! },
          endpoint: endpoints.get(r.endpoint_id)!,
        }));
      }),
    );
    return rows
      .map(({ row: r, endpoint: e }) => ({
        ref: r.event_id,
        eventId: r.event_id,
        endpointId: r.endpoint_id,
        owner: e.owner,
        url: e.url,
        sealedSecret: e.secret,
        endpointFailures: e.failures,
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
    if (s.kind === 'delivered' || s.kind === 'give-up') {
      const query = s.kind === 'delivered' ? { ...DELIVERED, values: key } : { ...GIVE_UP, values: [...key, s.error] };
      const { rows } = await writeWithClient(this.pool, (client) => client.query<{ settled: number }>(query));
      return rows[0]?.settled === 1;
    }
    const query =
      s.kind === 'retry' ? { ...RETRY, values: [...key, Math.round(s.delayMs), s.error] } : { ...RELEASE, values: key };
    const { rowCount } = await writeWithClient(this.pool, (client) => client.query(query));
    return rowCount === 1;
  }

  async endClaim(endpointId: string, claim: string, end: ClaimEnd): Promise<boolean> {
    const delayMs = end.kind === 'failed' ? Math.round(end.delayMs) : 0;
    const { rowCount } = await writeWithClient(this.pool, (client) =>
      client.query({ ...END_CLAIM, values: [endpointId, claim, delayMs, end.kind] }),
    );
    return rowCount === 1;
  }

  async disableEndpoint(endpointId: string, reason: string): Promise<boolean> {
    const { rows } = await writeWithClient(this.pool, (client) =>
      client.query<{ disabled: number }>({ ...DISABLE, values: [endpointId, reason] }),
    );
    return rows[0]?.disabled === 1;
  }
}
