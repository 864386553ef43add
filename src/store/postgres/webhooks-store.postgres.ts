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
import { operation } from '../operation.js';
import { inTransaction, run, withClient, writeWithClient } from './db-connect.postgres.js';
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

// Events of the log one fan-out step passes at most; a claim takes steps
// until it has made FAN_OUT_DELIVERIES deliveries or passed FAN_OUT_STEPS
// steps, so that each statement and each claim stay short.
const FAN_OUT_EVENTS = 1024;
const FAN_OUT_STEPS = 16;
const FAN_OUT_DELIVERIES = 4096;

// The webhook endpoints' and the outbox's operations. Locks: reads take
// none. Each write takes the row locks of the rows it changes; where two
// instances could take the same work, the statement says how they keep
// apart: an advisory lock per owner for the cap, SKIP LOCKED for the
// fan-out position and for claims, and a settlement changes a delivery only
// while the claim that leased it still holds it.
const SQL = {
  // The cap and the insert (add) under a transaction-scoped advisory lock
  // per owner: two adds at once cannot both pass the cap.
  ownerLock: operation<[owner: string]>(
    'webhooks_owner_lock',
    "SELECT pg_advisory_xact_lock(hashtextextended('plant-store webhooks ' || $1::text, 0))",
  ),
  add: operation<
    [
      id: string,
      owner: string,
      url: string,
      events: string,
      secret: Buffer,
      keyId: string,
      createdAt: Date,
      max: number,
    ]
  >(
    'webhooks_insert',
    `INSERT INTO webhook_endpoints (id, owner, url, events, secret, key_id, created_at, from_event)
    SELECT $1::text, $2::text, $3::text, $4::text, $5::bytea, $6::text, $7::timestamptz,
      (SELECT coalesce(max(id), 0) FROM plant_events)
    WHERE (SELECT count(*) FROM webhook_endpoints WHERE owner = $2::text AND disabled_at IS NULL) < $8::int8`,
  ),
  all: operation<[], EndpointRow>(
    'webhooks_all',
    `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending
    FROM webhook_endpoints e ORDER BY created_at, id`,
  ),
  // The foreign key's ON DELETE CASCADE removes the endpoint's waiting events.
  remove: operation<[id: string]>('webhooks_remove', 'DELETE FROM webhook_endpoints WHERE id = $1::text'),
  get: operation<[id: string], EndpointRow & Pick<Endpoint, 'secret'>>(
    'webhooks_get',
    `SELECT id, owner, url, events, key_id, created_at, disabled_at, disabled_reason, pending, secret
    FROM webhook_endpoints WHERE id = $1::text`,
  ),

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
  fanOut: operation<[maxPending: number], { moved: number; added: number; overfull: string[] }>(
    'outbox_fan_out',
    `WITH pos AS (
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
  ),
  /**
   * Leases the endpoints that are due (waiting longest first), at most
   * $perOwner of an owner counting those the caller is busy with already.
   * SKIP LOCKED: instances claiming at once pass over each other's endpoints;
   * retry_at moved past the lease keeps the endpoint from every later claim
   * until the claim ends or the lease runs out (the claimer died).
   */
  leaseEndpoints: operation<
    [
      keyId: string,
      exclude: string[],
      busyOwners: string[],
      busyCounts: number[],
      perOwner: number,
      limit: number,
      leaseMs: number,
      claim: string,
    ],
    LeasedEndpoint
  >(
    'outbox_lease_endpoints',
    `WITH busy AS (
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
  ),
  /**
   * Each leased endpoint's due deliveries, oldest first, leased to the claim.
   * SKIP LOCKED: a delivery whose row another transaction holds (a late
   * settlement) is left for the next claim instead of waited for.
   */
  claimRows: operation<[endpoints: string[], perEndpoint: number, leaseMs: number, claim: string], ClaimRow>(
    'outbox_claim_rows',
    `WITH picked AS (
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
  ),
  // The claimed deliveries' events, read from the log, which keeps every event a delivery refers to.
  claimedEvents: operation<[ids: string[]], EventRow>(
    'outbox_claimed_events',
    `SELECT id, type, plant_id, name, tag, floor(extract(epoch FROM occurred_at) * 1000)::int8 AS occurred_at
    FROM plant_events WHERE id = ANY ($1::int8[])`,
  ),
  // Leased endpoints whose events all wait for their own retry: not worth a look before then.
  park: operation<[endpoints: string[], claim: string]>(
    'outbox_park',
    `UPDATE webhook_endpoints e
    SET retry_at = coalesce(
        (SELECT min(next_attempt_at) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.failed_at IS NULL),
        now()
      ),
      claim = NULL
    WHERE e.id = ANY ($1::text[]) AND e.claim = $2::text`,
  ),
  // Settlements (delivered, retry, giveUp, release) change a delivery only
  // while `claim` still holds it, so one whose lease ran out and was claimed
  // again is left to the new claim; each takes the delivery's row lock, and
  // delivered and giveUp the endpoint's too, to count it out of pending.
  delivered: operation<[eventId: string, claim: string], { settled: number }>(
    'outbox_delivered',
    `WITH gone AS (
      DELETE FROM webhook_deliveries WHERE event_id = $1::text AND claim = $2::text RETURNING endpoint_id
    ), counted AS (
      UPDATE webhook_endpoints e SET pending = e.pending - 1 FROM gone WHERE e.id = gone.endpoint_id
    )
    SELECT count(*)::int AS settled FROM gone`,
  ),
  retry: operation<[eventId: string, claim: string, delayMs: number, error: string]>(
    'outbox_retry',
    `UPDATE webhook_deliveries
    SET next_attempt_at = now() + $3::int8 * interval '1 millisecond', claim = NULL, last_error = $4::text
    WHERE event_id = $1::text AND claim = $2::text`,
  ),
  // Given up: kept, with its next attempt at 'infinity' (no claim's range reaches it), for redeliver.
  giveUp: operation<[eventId: string, claim: string, error: string], { settled: number }>(
    'outbox_give_up',
    `WITH failed AS (
      UPDATE webhook_deliveries SET failed_at = now(), next_attempt_at = 'infinity', claim = NULL, last_error = $3::text
      WHERE event_id = $1::text AND claim = $2::text RETURNING endpoint_id
    ), counted AS (
      UPDATE webhook_endpoints e SET pending = e.pending - 1 FROM failed WHERE e.id = failed.endpoint_id
    )
    SELECT count(*)::int AS settled FROM failed`,
  ),
  /**
   * The endpoint's failed deliveries queued again in one statement: due at
   * once, before the newer ones, in the order of their events; counted in, and the endpoint's backoff
   * ended unless a claim holds it (that claim ends it as usual). A disabled
   * endpoint has none: its deliveries were dropped when it was disabled.
   * Locks: the failed deliveries' rows and the endpoint's.
   */
  redeliver: operation<[id: string], { found: number; n: number }>(
    'webhooks_redeliver',
    `WITH endpoint AS (
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
  ),
  release: operation<[eventId: string, claim: string]>(
    'outbox_release',
    `UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = now(), claim = NULL
    WHERE event_id = $1::text AND claim = $2::text`,
  ),
  // Only while the claim holds the endpoint; the endpoint's row lock.
  endClaim: operation<[endpointId: string, claim: string, delayMs: number, end: ClaimEnd['kind']]>(
    'outbox_end_claim',
    `UPDATE webhook_endpoints
    SET retry_at = now() + $3::int8 * interval '1 millisecond',
      failures = CASE $4::text WHEN 'done' THEN 0 WHEN 'failed' THEN failures + 1 ELSE failures END,
      claim = NULL
    WHERE id = $1::text AND claim = $2::text`,
  ),
  // The endpoint's row lock, then its deliveries', dropped in the same
  // statement: a claim holding some of them settles nothing afterwards.
  disable: operation<[endpointId: string, reason: string], { disabled: number }>(
    'outbox_disable',
    `WITH disabled AS (
      UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = $2::text, pending = 0, claim = NULL
      WHERE id = $1::text AND disabled_at IS NULL RETURNING id
    ), dropped AS (
      DELETE FROM webhook_deliveries WHERE endpoint_id IN (SELECT id FROM disabled)
    )
    SELECT count(*)::int AS disabled FROM disabled`,
  ),
};

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
        await run(client, SQL.ownerLock, [e.owner]);
        return (await run(client, SQL.add, values)).rowCount === 1;
      }),
    );
    if (!added) throw new TooManyEndpointsError(e.owner, max);
  }

  async list(): Promise<(WebhookEndpointRecord & { pending: number })[]> {
    const { rows } = await withClient(this.pool, (client) => run(client, SQL.all, []));
    return rows.map((row) => ({ ...toRecord(row), pending: row.pending }));
  }

  async get(id: string): Promise<{ endpoint: WebhookEndpointRecord; sealedSecret: Buffer } | undefined> {
    const { rows } = await withClient(this.pool, (client) => run(client, SQL.get, [id]));
    return rows[0] && { endpoint: toRecord(rows[0]), sealedSecret: rows[0].secret };
  }

  async remove(id: string): Promise<boolean> {
    const { rowCount } = await writeWithClient(this.pool, (client) => run(client, SQL.remove, [id]));
    return rowCount === 1;
  }

  async redeliver(id: string): Promise<number | undefined> {
    const { rows } = await writeWithClient(this.pool, (client) => run(client, SQL.redeliver, [id]));
    return rows[0]!.found === 0 ? undefined : rows[0]!.n;
  }
}

export class PostgresOutboxStore implements OutboxStore {
  constructor(private readonly pool: pg.Pool) {}

  async claim(o: ClaimOptions): Promise<ClaimedDelivery[]> {
    let added = 0;
    for (let step = 0; step < FAN_OUT_STEPS && added < FAN_OUT_DELIVERIES; step++) {
      const { rows } = await writeWithClient(this.pool, (client) => run(client, SQL.fanOut, [o.maxPending]));
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
        const leased = await run(client, SQL.leaseEndpoints, [
          o.keyId,
          [...o.exclude],
          owners,
          counts,
          o.perOwner,
          o.limit,
          o.leaseMs,
          claim,
        ]);
        if (leased.rows.length === 0) return [];
        const endpoints = new Map(leased.rows.map((e) => [e.id, e]));
        const claimed = await run(client, SQL.claimRows, [[...endpoints.keys()], o.perEndpoint, o.leaseMs, claim]);
        const idle = [...endpoints.keys()].filter((id) => !claimed.rows.some((r) => r.endpoint_id === id));
        if (idle.length > 0) await run(client, SQL.park, [idle, claim]);
        if (claimed.rows.length === 0) return [];
        const events = await run(client, SQL.claimedEvents, [
          [...new Set(claimed.rows.map((r) => r.event.toString()))],
        ]);
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
    const { ref, claim } = d;
    if (s.kind === 'delivered' || s.kind === 'give-up') {
      const { rows } = await writeWithClient(this.pool, (client) =>
        s.kind === 'delivered'
          ? run(client, SQL.delivered, [ref, claim])
          : run(client, SQL.giveUp, [ref, claim, s.error]),
      );
      return rows[0]?.settled === 1;
    }
    const { rowCount } = await writeWithClient(this.pool, (client) =>
      s.kind === 'retry'
        ? run(client, SQL.retry, [ref, claim, Math.round(s.delayMs), s.error])
        : run(client, SQL.release, [ref, claim]),
    );
    return rowCount === 1;
  }

  async endClaim(endpointId: string, claim: string, end: ClaimEnd): Promise<boolean> {
    const delayMs = end.kind === 'failed' ? Math.round(end.delayMs) : 0;
    const { rowCount } = await writeWithClient(this.pool, (client) =>
      run(client, SQL.endClaim, [endpointId, claim, delayMs, end.kind]),
    );
    return rowCount === 1;
  }

  async disableEndpoint(endpointId: string, reason: string): Promise<boolean> {
    const { rows } = await writeWithClient(this.pool, (client) => run(client, SQL.disable, [endpointId, reason]));
    return rows[0]?.disabled === 1;
  }
}
