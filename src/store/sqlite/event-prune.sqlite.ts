import type Database from 'better-sqlite3';
import { EVENT_PRUNE_CHUNK } from '../store.js';
import { operation } from '../operation.js';
import type { ColumnTuple } from '../rows.js';
import { prepareAll } from './db-connect.sqlite.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';
import { boundLimit } from './bound-limit.js';

// The event log's prune (EventLog.prune), as the writer thread's write kind
// 'events-prune' (write-kinds.ts); the log's reads are event-log.sqlite.ts's.

type Event = SafeIntegers<SqliteRow<'plant_events'>>;
type EventId = Event['id'];

/** What a delivery-needs operation answers when delivery holds back nothing. */
const NO_NEED = Number.MAX_SAFE_INTEGER;

// The operations of pruning, on the writer thread's connection, in its
// batch's transaction. Locks: SQLite's write lock, taken at BEGIN IMMEDIATE
// (group-commit.ts), so nothing is logged or fanned out while a round looks
// and deletes. SQLite has no DELETE in a WITH: what PostgreSQL's
// plant_events_prune_by_age and plant_events_prune_owner do in one statement
// each takes the steps named after them here.
const PRUNE_SQL = {
  // Failed deliveries go with the events of their age (the partial index webhook_deliveries_failed).
  forgetFailed: operation<[before: number]>(
    'webhook_deliveries_forget_failed',
    'DELETE FROM webhook_deliveries WHERE failed_at < ?',
  ),
  // With no active endpoint, nothing is to be fanned out: the position moves to the newest (passFanOut).
  noEndpoint: operation<[], number>(
    'plant_events_prune_no_endpoint',
    'SELECT NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL)',
    { rowMode: 'value' },
  ),
  passFanOut: operation<[]>(
    'plant_events_prune_pass_fan_out',
    'UPDATE webhook_fan_out SET up_to = max(up_to, coalesce((SELECT max(id) FROM plant_events), 0))',
  ),
  head: operation<[limit: number], ColumnTuple<Event, ['id', 'occurred_at']>>(
    'plant_events_prune_by_age_head',
    `SELECT id, occurred_at FROM plant_events ORDER BY id ${boundLimit('?')}`,
    { rowMode: 'array', bigints: true },
  ),
  newest: operation<[], EventId | null>('plant_events_prune_by_age_newest', 'SELECT max(id) FROM plant_events', {
    rowMode: 'value',
    bigints: true,
  }),
  // The oldest event webhook delivery still needs: the first not yet fanned
  // out, and every event a delivery refers to, pending or failed. Pruning
  // stops below it; ownerNeeded is the same for one owner's events.
  needed: operation<[], EventId | null>(
    'plant_events_prune_by_age_needs',
    `SELECT min((SELECT up_to + 1 FROM webhook_fan_out), coalesce((SELECT min(event) FROM webhook_deliveries), ${NO_NEED}))`,
    { rowMode: 'value', bigints: true },
  ),
  lastRemoved: operation<[upTo: bigint], EventId | null>(
    'plant_events_prune_by_age_last',
    'SELECT max(id) FROM plant_events WHERE id <= ?',
    { rowMode: 'value', bigints: true },
  ),
  mark: operation<[upTo: bigint]>(
    'plant_events_prune_by_age_mark',
    'UPDATE plant_events_pruned SET up_to = max(up_to, ?)',
  ),
  remove: operation<[upTo: bigint]>('plant_events_prune_by_age_remove', 'DELETE FROM plant_events WHERE id <= ?'),
  // An owner's mark at or below the mark of pruning by age says nothing more.
  forgetMarks: operation<[]>(
    'plant_events_prune_by_age_forget',
    'DELETE FROM plant_events_owner_pruned WHERE up_to <= (SELECT up_to FROM plant_events_pruned)',
  ),
  loggedOwners: operation<[after: bigint, limit: number], [owner: Event['owner'], last: EventId, n: bigint]>(
    'plant_events_logged_owners',
    `SELECT owner, max(id), count(*) FROM (SELECT owner, id FROM plant_events WHERE id > ? ORDER BY id ${boundLimit('?')}) GROUP BY owner`,
    { rowMode: 'array', bigints: true },
  ),
  // The newest event of the owner beyond its `keep` newest ones: counted, as ids need not be dense.
  ownerBeyondKept: operation<[owner: string, keep: number], EventId>(
    'plant_events_prune_owner_beyond_kept',
    'SELECT id FROM plant_events WHERE owner = ? ORDER BY id DESC LIMIT 1 OFFSET ?',
    { rowMode: 'value', bigints: true },
  ),
  ownerChunkEnd: operation<[owner: string, limit: number], EventId | null>(
    'plant_events_prune_owner_chunk_end',
    `SELECT max(id) FROM (SELECT id FROM plant_events WHERE owner = ? ORDER BY id ${boundLimit('?')})`,
    { rowMode: 'value', bigints: true },
  ),
  ownerNeeded: operation<[{ owner: string }], EventId | null>(
    'plant_events_prune_owner_needs',
    `SELECT min(
       coalesce(CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints WHERE owner = @owner AND disabled_at IS NULL)
         THEN (SELECT up_to + 1 FROM webhook_fan_out) END, ${NO_NEED}),
       coalesce((SELECT min(d.event) FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
         WHERE e.owner = @owner), ${NO_NEED}))`,
    { rowMode: 'value', bigints: true },
  ),
  ownerBelow: operation<[owner: string, below: bigint], EventId | null>(
    'plant_events_prune_owner_below',
    'SELECT max(id) FROM plant_events WHERE owner = ? AND id < ?',
    { rowMode: 'value', bigints: true },
  ),
  markOwner: operation<[owner: string, upTo: bigint]>(
    'plant_events_prune_owner_mark',
    'INSERT INTO plant_events_owner_pruned (owner, up_to) VALUES (?, ?) ON CONFLICT (owner) DO UPDATE SET up_to = max(up_to, excluded.up_to)',
  ),
  removeOwner: operation<[owner: string, upTo: bigint]>(
    'plant_events_prune_owner_remove',
    'DELETE FROM plant_events WHERE owner = ? AND id <= ?',
  ),
};

/**
 * One round of EventLog.prune on the writer's connection, in the batch's
 * transaction. By age (older than `before`, in ms since the epoch): a
 * prefix of the whole log (never a row in the middle,
 * see EventLog), at most EVENT_PRUNE_CHUNK rows and never the newest event,
 * whose id tells new streams and resuming clients where the log is. By
 * count: for each owner of the events logged since the last round (at most
 * EVENT_PRUNE_CHUNK events looked at), a prefix of that owner's events
 * beyond its newest `keep`, at most EVENT_PRUNE_CHUNK of them. Each raises
 * its mark before it deletes: should the delete then fail, clients get a
 * needless reset rather than a silent gap.
 */
export function eventPruner(
  db: Database.Database,
): (op: { before: number; keep: number }) => { removed: number; more: boolean } {
  const {
    forgetFailed,
    noEndpoint,
    passFanOut,
    head,
    newest,
    needed,
    lastRemoved,
    mark,
    remove,
    forgetMarks,
    loggedOwners: logged,
    ownerBeyondKept,
    ownerChunkEnd,
    ownerNeeded,
    ownerBelow,
    markOwner,
    removeOwner,
  } = prepareAll(db, PRUNE_SQL);
  /** Every owner of the events up to this id has been looked at. */
  let lookedUpTo = 0n;

  const byAge = (before: number): number => {
    const rows = head.all(EVENT_PRUNE_CHUNK);
    if (rows.length === 0) return 0;
    let upTo = 0n;
    for (const [id, at] of rows) if (at < BigInt(before)) upTo = id;
    const last = newest.get()!;
    if (upTo > last - 1n) upTo = last - 1n;
    const keep = needed.get()!;
    if (upTo > keep - 1n) upTo = keep - 1n;
    const removed = lastRemoved.get(upTo);
    if (removed === null || removed === undefined) return 0;
    mark.run(removed);
    const n = remove.run(removed).changes;
    forgetMarks.run();
    return n;
  };

  return ({ before, keep: asked }) => {
    // Each owner keeps its newest event at least, so the log's newest stays.
    const keep = Math.max(1, asked);
    forgetFailed.run(before);
    if (noEndpoint.get() === 1) passFanOut.run();
    const aged = byAge(before);
    let capped = 0;
    let scanned = 0n;
    let last = lookedUpTo;
    let ownerLeft = false;
    for (const [owner, maxId, n] of logged.all(lookedUpTo, EVENT_PRUNE_CHUNK)) {
      scanned += n;
      if (maxId > last) last = maxId;
      const wanted = ownerBeyondKept.get(owner, keep);
      if (wanted === undefined) continue;
      const chunkEnd = ownerChunkEnd.get(owner, EVENT_PRUNE_CHUNK)!;
      let upTo = wanted < chunkEnd ? wanted : chunkEnd;
      // An event webhook delivery still needs stays, and those after it: the
      // owner is looked at again when it logs more.
      const need = ownerNeeded.get({ owner })!;
      if (upTo >= need) {
        const below = ownerBelow.get(owner, need);
        if (below === null || below === undefined) continue;
        upTo = below;
      } else if (upTo < wanted) ownerLeft = true;
      markOwner.run(owner, upTo);
      capped += removeOwner.run(owner, upTo).changes;
    }
    // An owner with more to remove is looked at again next round.
    if (!ownerLeft) lookedUpTo = last;
    return {
      removed: aged + capped,
      more: aged >= EVENT_PRUNE_CHUNK || ownerLeft || scanned >= BigInt(EVENT_PRUNE_CHUNK),
    };
  };
}
