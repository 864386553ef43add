import type Database from 'better-sqlite3';
import {
  tooManyPendingReason,
  type ClaimEnd,
  type ClaimOptions,
  type DeliverySettlement,
  type WebhookEventType,
} from '../store.js';
import { boundLimit } from './bound-limit.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';
import { operation } from '../operation.js';
import { prepareAll } from './db-connect.sqlite.js';

/** A claimed delivery as it crosses back from the writer thread (a Buffer arrives as a Uint8Array). */
export interface ClaimRow {
  seq: bigint;
  eventId: string;
  endpointId: string;
  owner: string;
  url: string;
  secret: Uint8Array;
  failures: number;
  type: WebhookEventType;
  plantId: bigint;
  name: string | null;
  tag: string | null;
  occurredAt: number;
  attempts: number;
}

type EndpointRow = Pick<SqliteRow<'webhook_endpoints'>, 'id' | 'owner' | 'url' | 'secret' | 'failures'>;
/** A due delivery with its event, read in safeIntegers mode. */
type DueRow = SafeIntegers<
  Pick<SqliteRow<'webhook_deliveries'>, 'seq' | 'event_id' | 'attempts' | 'next_attempt_at'> &
    Pick<SqliteRow<'plant_events'>, 'type' | 'plant_id' | 'name' | 'tag' | 'occurred_at'>
>;

// Subscribed: an active endpoint of the event's owner whose events list its type, registered before it.
const SUBSCRIBED = `e.owner = ev.owner AND e.disabled_at IS NULL AND ev.id > e.from_event
  AND instr(' ' || e.events || ' ', ' ' || ev.type || ' ') > 0`;
/** The next attempt of a failed delivery: past every clock (the largest time a Date holds). */
export const NEVER_DUE = 8_640_000_000_000_000;
// Events of the log one fan-out step passes at most; a claim takes steps
// until it has made FAN_OUT_DELIVERIES deliveries or passed FAN_OUT_STEPS
// steps: it stays a short write on the writer thread (a few ms), while the
// events of owners without an endpoint cost only the bounds of each step.
const FAN_OUT_EVENTS = 1024;
const FAN_OUT_STEPS = 16;
const FAN_OUT_DELIVERIES = 4096;

// The outbox's writes, run on the writer thread. Locks: every one runs in
// the writer thread's group commit, which holds SQLite's write lock from
// BEGIN IMMEDIATE to its COMMIT (group-commit.ts): a claim's fan-out, leases
// and reads are one atomic step, and the claims of other processes on the
// file wait for the lock (busy_timeout) instead of interleaving. So no
// statement here needs a lock of its own; a settlement still changes a
// delivery only while the claim that leased it holds it, as a lease may
// have run out and been claimed again.
const SQL = {
  fannedOut: operation<[], bigint>('outbox_fanned_out', 'SELECT up_to FROM webhook_fan_out', {
    rowMode: 'value',
    bigints: true,
  }),
  /** The end of the next step: the id of the FAN_OUT_EVENTS-th event after the position, or the newest. */
  stepEnd: operation<[after: bigint, events: number], bigint | null>(
    'outbox_step_end',
    `SELECT max(id) FROM (SELECT id FROM plant_events WHERE id > ? ORDER BY id ${boundLimit('?')})`,
    { rowMode: 'value', bigints: true },
  ),
  anyEndpoint: operation<[], number>(
    'outbox_any_endpoint',
    'SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL)',
    { rowMode: 'value' },
  ),
  newest: operation<[], bigint | null>('outbox_newest_event', 'SELECT max(id) FROM plant_events', {
    rowMode: 'value',
    bigints: true,
  }),
  /**
   * Driven from the endpoints: each active one reads its owner's events of
   * the step (a range of plant_events_owner_id), so events of owners without
   * an endpoint cost nothing but the step's bounds.
   */
  fanOut: operation<[step: { from: bigint; to: bigint }], string>(
    'outbox_fan_out',
    `INSERT INTO webhook_deliveries (event_id, endpoint_id, event, next_attempt_at)
     SELECT 'msg_' || lower(hex(randomblob(16))), e.id, ev.id, ev.occurred_at
     FROM webhook_endpoints e CROSS JOIN plant_events ev
     WHERE ev.owner = e.owner AND ev.id > @from AND ev.id <= @to AND ${SUBSCRIBED}
     ORDER BY ev.id
     RETURNING endpoint_id`,
    { rowMode: 'value' },
  ),
  moveTo: operation<[upTo: bigint]>('outbox_move_to', 'UPDATE webhook_fan_out SET up_to = ?'),
  countIn: operation<[n: number, endpointId: string]>(
    'outbox_count_in',
    'UPDATE webhook_endpoints SET pending = pending + ? WHERE id = ?',
  ),
  overfull: operation<[maxPending: number], string>(
    'outbox_overfull',
    'SELECT id FROM webhook_endpoints WHERE disabled_at IS NULL AND pending > ?',
    { rowMode: 'value' },
  ),
  /** Matches the partial index webhook_endpoints_due. */
  dueEndpoints: operation<[now: number, keyId: string], EndpointRow>(
    'outbox_due_endpoints',
    `SELECT id, owner, url, secret, failures FROM webhook_endpoints
     WHERE disabled_at IS NULL AND pending > 0 AND retry_at <= ? AND key_id = ?
     ORDER BY retry_at, id`,
  ),
  /** The event's content is read from the log, which keeps every event a delivery refers to. */
  due: operation<[endpointId: string, now: number, limit: number], DueRow>(
    'outbox_due',
    `SELECT d.seq, d.event_id, ev.type, ev.plant_id, ev.name, ev.tag, ev.occurred_at, d.attempts, d.next_attempt_at
     FROM webhook_deliveries d JOIN plant_events ev ON ev.id = d.event
     WHERE d.endpoint_id = ? AND d.next_attempt_at <= ?
     ORDER BY d.next_attempt_at, d.seq ${boundLimit('?')}`,
    { bigints: true },
  ),
  nextDue: operation<[endpointId: string], number | null>(
    'outbox_next_due',
    'SELECT min(next_attempt_at) FROM webhook_deliveries WHERE endpoint_id = ? AND failed_at IS NULL',
    { rowMode: 'value' },
  ),
  /** Leases the endpoint to a claim, or parks it (no claim) until its next delivery is due. */
  leaseEndpoint: operation<[retryAt: number, claim: string | null, endpointId: string]>(
    'outbox_lease_endpoint',
    'UPDATE webhook_endpoints SET retry_at = ?, claim = ? WHERE id = ?',
  ),
  lease: operation<[nextAttemptAt: number, claim: string, seq: bigint]>(
    'outbox_lease',
    'UPDATE webhook_deliveries SET attempts = attempts + 1, next_attempt_at = ?, claim = ? WHERE seq = ?',
  ),
  delivered: operation<[seq: bigint, claim: string], { endpoint_id: string }>(
    'outbox_delivered',
    'DELETE FROM webhook_deliveries WHERE seq = ? AND claim = ? RETURNING endpoint_id',
  ),
  countOut: operation<[endpointId: string]>(
    'outbox_count_out',
    'UPDATE webhook_endpoints SET pending = pending - 1 WHERE id = ?',
  ),
  retry: operation<[nextAttemptAt: number, error: string, seq: bigint, claim: string]>(
    'outbox_retry',
    'UPDATE webhook_deliveries SET next_attempt_at = ?, claim = NULL, last_error = ? WHERE seq = ? AND claim = ?',
  ),
  /** Given up: kept, with its next attempt past every clock (no claim's range reaches it), for redeliver. */
  giveUp: operation<
    [failedAt: number, never: number, error: string, seq: bigint, claim: string],
    { endpoint_id: string }
  >(
    'outbox_give_up',
    `UPDATE webhook_deliveries SET failed_at = ?, next_attempt_at = ?, claim = NULL, last_error = ?
     WHERE seq = ? AND claim = ? RETURNING endpoint_id`,
  ),
  release: operation<[now: number, seq: bigint, claim: string]>(
    'outbox_release',
    'UPDATE webhook_deliveries SET attempts = attempts - 1, next_attempt_at = ?, claim = NULL WHERE seq = ? AND claim = ?',
  ),
  endClaim: operation<[retryAt: number, end: ClaimEnd['kind'], endpointId: string, claim: string]>(
    'outbox_end_claim',
    `UPDATE webhook_endpoints SET retry_at = ?,
       failures = CASE ? WHEN 'done' THEN 0 WHEN 'failed' THEN failures + 1 ELSE failures END, claim = NULL
     WHERE id = ? AND claim = ?`,
  ),
  disable: operation<[now: number, reason: string, endpointId: string]>(
    'outbox_disable',
    'UPDATE webhook_endpoints SET disabled_at = ?, disabled_reason = ?, pending = 0, claim = NULL WHERE id = ? AND disabled_at IS NULL',
  ),
  dropAll: operation<[endpointId: string]>('outbox_drop_all', 'DELETE FROM webhook_deliveries WHERE endpoint_id = ?'),
};

/**
 * Fan-out, claims, settlements and endpoint disabling, as plain statements,
 * by kind (write-kinds.ts); the caller owns the transaction. They run on the
 * writer thread like the plant writes: a claim or a settlement joins the next
 * group commit instead of blocking the event loop on an fsync of its own.
 */
export function outboxWrites(db: Database.Database) {
  const {
    fannedOut,
    stepEnd,
    anyEndpoint,
    newest,
    fanOut,
    moveTo,
    countIn,
    overfull,
    dueEndpoints,
    due,
    nextDue,
    leaseEndpoint,
    lease,
    delivered,
    countOut,
    retry,
    giveUp,
    release,
    endClaim,
    disable,
    dropAll,
  } = prepareAll(db, SQL);

  const disableEndpoint = (endpointId: string, reason: string, now: number): boolean => {
    const disabled = disable.run(now, reason, endpointId).changes === 1;
    if (disabled) dropAll.run(endpointId);
    return disabled;
  };

  /**
   * Gives the events logged since the last fan-out to the endpoints
   * subscribed, and disables those that fell too far behind. With no active
   * endpoint the position moves to the newest event at once.
   */
  const fanOutEvents = (now: number, maxPending: number): void => {
    let from = fannedOut.get()!;
    if (anyEndpoint.get() !== 1) {
      const last = newest.get() ?? from;
      if (last > from) moveTo.run(last);
      return;
    }
    let added = 0;
    for (let step = 0; step < FAN_OUT_STEPS && added < FAN_OUT_DELIVERIES; step++) {
      const to = stepEnd.get(from, FAN_OUT_EVENTS);
      if (to === null || to === undefined) break;
      const counts = new Map<string, number>();
      for (const endpoint of fanOut.all({ from, to })) counts.set(endpoint, (counts.get(endpoint) ?? 0) + 1);
      for (const [endpoint, n] of counts) {
        countIn.run(n, endpoint);
        added += n;
      }
      moveTo.run(to);
      from = to;
    }
    if (added === 0) return;
    for (const id of overfull.all(maxPending)) {
      disableEndpoint(id, tooManyPendingReason(maxPending, new Date(now)), now);
    }
  };

  const claim = (op: { options: ClaimOptions; now: number; claim: string }): ClaimRow[] => {
    const { keyId, limit, perEndpoint, leaseMs, exclude, perOwner, busyOwners, maxPending } = op.options;
    fanOutEvents(op.now, maxPending);
    const busy = new Set(exclude);
    const owners = new Map(busyOwners);
    const claimed: ClaimRow[] = [];
    let endpoints = 0;
    for (const endpoint of dueEndpoints.all(op.now, keyId)) {
      if (endpoints >= limit) break;
      const taken = owners.get(endpoint.owner) ?? 0;
      if (busy.has(endpoint.id) || taken >= perOwner) continue;
      const rows = due.all(endpoint.id, op.now, perEndpoint);
      if (rows.length === 0) {
        // Its events all wait for their own retry: not worth a look before then.
        leaseEndpoint.run(nextDue.get(endpoint.id) ?? op.now, null, endpoint.id);
        continue;
      }
      endpoints++;
      owners.set(endpoint.owner, taken + 1);
      leaseEndpoint.run(op.now + leaseMs, op.claim, endpoint.id);
      for (const row of rows) {
        lease.run(op.now + leaseMs, op.claim, row.seq);
        claimed.push({
          seq: row.seq,
          eventId: row.event_id,
          endpointId: endpoint.id,
          owner: endpoint.owner,
          url: endpoint.url,
          secret: endpoint.secret,
          failures: endpoint.failures,
          type: row.type,
          plantId: row.plant_id,
          name: row.name,
          tag: row.tag,
          occurredAt: Number(row.occurred_at),
          attempts: Number(row.attempts) + 1,
        });
      }
    }
    return claimed;
  };

  const settle = (op: { seq: bigint; claim: string; settlement: DeliverySettlement; now: number }): boolean => {
    const s: DeliverySettlement = op.settlement;
    switch (s.kind) {
      case 'delivered':
      case 'give-up': {
        const gone =
          s.kind === 'delivered'
            ? delivered.get(op.seq, op.claim)
            : giveUp.get(op.now, NEVER_DUE, s.error, op.seq, op.claim);
        if (gone) countOut.run(gone.endpoint_id);
        return gone !== undefined;
      }
      case 'retry':
        return retry.run(op.now + s.delayMs, s.error, op.seq, op.claim).changes === 1;
      case 'release':
        return release.run(op.now, op.seq, op.claim).changes === 1;
    }
  };

  const end = (op: { endpointId: string; claim: string; end: ClaimEnd; now: number }): boolean => {
    const at = op.end.kind === 'failed' ? op.now + op.end.delayMs : op.now;
    return endClaim.run(at, op.end.kind, op.endpointId, op.claim).changes === 1;
  };

  return {
    'outbox-claim': claim,
    'outbox-settle': settle,
    'outbox-end': end,
    'outbox-disable': (op: { endpointId: string; reason: string; now: number }): boolean =>
      disableEndpoint(op.endpointId, op.reason, op.now),
  };
}
