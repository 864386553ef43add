import type Database from 'better-sqlite3';
import type { ClaimOptions, DeliverySettlement, WebhookEventType } from '../store.js';

/**
 * Outbox writes run on the writer thread like the plant writes: a claim or a
 * settlement joins the next group commit instead of blocking the event loop
 * on an fsync of its own.
 */
export type OutboxOp =
  | { kind: 'outbox-claim'; options: ClaimOptions; now: number; claim: string }
  | { kind: 'outbox-settle'; seq: bigint; claim: string; settlement: DeliverySettlement; now: number }
  | { kind: 'outbox-disable'; endpointId: string; reason: string; now: number };

/** A claimed delivery as it crosses back from the writer thread (a Buffer arrives as a Uint8Array). */
export interface ClaimRow {
  seq: bigint;
  eventId: string;
  endpointId: string;
  url: string;
  secret: Uint8Array;
  type: WebhookEventType;
  plantId: bigint;
  name: string | null;
  tag: string | null;
  occurredAt: number;
  attempts: number;
}

export interface OutboxResults {
  'outbox-claim': ClaimRow[];
  'outbox-settle': boolean;
  'outbox-disable': boolean;
}

interface EndpointRow {
  id: string;
  url: string;
  secret: Buffer;
}

interface DueRow {
  seq: bigint;
  event_id: string;
  type: WebhookEventType;
  plant_id: bigint;
  name: string | null;
  tag: string | null;
  occurred_at: bigint;
  attempts: bigint;
  next_attempt_at: bigint;
}

/**
 * Writes the outbox rows of plant writes, in the plant write's transaction.
 * Whether any endpoint exists, and which events an owner subscribed to, is
 * read once per batch (inside its transaction, so an endpoint committed
 * before the batch is seen): with no endpoint registered, a batch of creates
 * pays one indexed lookup in all.
 */
export function eventRecorder(db: Database.Database) {
  const anyEndpoint = db
    .prepare<[], number>('SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL)')
    .pluck();
  const eventsOf = db
    .prepare<[string], string>('SELECT events FROM webhook_endpoints WHERE owner = ? AND disabled_at IS NULL')
    .pluck();
  const insert = db.prepare<{
    type: WebhookEventType;
    owner: string;
    id: bigint;
    name: string | null;
    tag: string | null;
    at: number;
  }>(
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, type, plant_id, name, tag, occurred_at, next_attempt_at)
     SELECT 'msg_' || lower(hex(randomblob(16))), id, @type, @id, @name, @tag, @at, @at
     FROM webhook_endpoints
     WHERE owner = @owner AND disabled_at IS NULL AND instr(' ' || events || ' ', ' ' || @type || ' ') > 0`,
  );
  let any: boolean | undefined;
  const subscribed = new Map<string, string>();
  return {
    /** Forgets what the previous batch read. */
    newBatch(): void {
      any = undefined;
      subscribed.clear();
    },
    record(type: WebhookEventType, owner: string, id: bigint, name: string | null, tag: string | null): void {
      any ??= anyEndpoint.get() === 1;
      if (!any) return;
      let events = subscribed.get(owner);
      if (events === undefined) {
        events = ` ${eventsOf.all(owner).join(' ')} `;
        subscribed.set(owner, events);
      }
      if (events.includes(` ${type} `)) insert.run({ type, owner, id, name, tag, at: Date.now() });
    },
  };
}

/** Claims, settlements and endpoint disabling, as plain statements; the caller owns the transaction. */
export function outboxWriter(db: Database.Database) {
  const endpoints = db.prepare<[string], EndpointRow>(
    'SELECT id, url, secret FROM webhook_endpoints WHERE key_id = ? AND disabled_at IS NULL',
  );
  const due = db
    .prepare<[string, number, number], DueRow>(
      `SELECT seq, event_id, type, plant_id, name, tag, occurred_at, attempts, next_attempt_at
       FROM webhook_deliveries WHERE endpoint_id = ? AND next_attempt_at <= ?
       ORDER BY next_attempt_at, seq LIMIT ?`,
    )
    .safeIntegers(true);
  const lease = db.prepare<[number, string, bigint]>(
    'UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, claim = ? WHERE seq = ?',
  );
  const remove = db.prepare<[bigint, string]>('DELETE FROM webhook_deliveries WHERE seq = ? AND claim = ?');
  const retry = db.prepare<[number, string, bigint, string]>(
    'UPDATE webhook_deliveries SET next_attempt_at = ?, claim = NULL, last_error = ? WHERE seq = ? AND claim = ?',
  );
  const release = db.prepare<[number, bigint, string]>(
    'UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = ?, claim = NULL WHERE seq = ? AND claim = ?',
  );
  const disable = db.prepare<[number, string, string]>(
    'UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND disabled_at IS NULL',
  );
  const dropAll = db.prepare<[string]>('DELETE FROM webhook_deliveries WHERE endpoint_id = ?');

  const claim = (op: Extract<OutboxOp, { kind: 'outbox-claim' }>): ClaimRow[] => {
    const { keyId, limit, perEndpoint, leaseMs, exclude } = op.options;
    const busy = new Set(exclude);
    const picked: { row: DueRow; endpoint: EndpointRow }[] = [];
    for (const endpoint of endpoints.all(keyId)) {
      if (busy.has(endpoint.id)) continue;
      for (const row of due.all(endpoint.id, op.now, perEndpoint)) picked.push({ row, endpoint });
    }
    picked.sort((a, b) => Number(a.row.next_attempt_at - b.row.next_attempt_at) || Number(a.row.seq - b.row.seq));
    const claimed = picked.slice(0, limit);
    for (const { row } of claimed) lease.run(op.now + leaseMs, op.claim, row.seq);
    return claimed.map(({ row, endpoint }) => ({
      seq: row.seq,
      eventId: row.event_id,
      endpointId: endpoint.id,
      url: endpoint.url,
      secret: endpoint.secret,
      type: row.type,
      plantId: row.plant_id,
      name: row.name,
      tag: row.tag,
      occurredAt: Number(row.occurred_at),
      attempts: Number(row.attempts) + 1,
    }));
  };

  const settle = (op: Extract<OutboxOp, { kind: 'outbox-settle' }>): boolean => {
    const s: DeliverySettlement = op.settlement;
    switch (s.kind) {
      case 'delivered':
      case 'drop':
        return remove.run(op.seq, op.claim).changes === 1;
      case 'retry':
        return retry.run(op.now + s.delayMs, s.error, op.seq, op.claim).changes === 1;
      case 'release':
        return release.run(op.now, op.seq, op.claim).changes === 1;
    }
  };

  return (op: OutboxOp): OutboxResults[OutboxOp['kind']] => {
    switch (op.kind) {
      case 'outbox-claim':
        return claim(op);
      case 'outbox-settle':
        return settle(op);
      case 'outbox-disable': {
        const disabled = disable.run(op.now, op.reason, op.endpointId).changes === 1;
        if (disabled) dropAll.run(op.endpointId);
        return disabled;
      }
    }
  };
}
