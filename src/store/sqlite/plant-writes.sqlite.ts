import type Database from 'better-sqlite3';
import { EVENT_PRUNE_CHUNK, type CreateOutcome } from '../store.js';
import type { WrittenOwner } from './change-epoch.js';
import { boundLimit } from './bound-limit.js';
import type { SqliteRow } from './tables.sqlite.js';

/** A plant as a create carries it to the writer thread. */
export type PlantRow = Pick<SqliteRow<'plants'>, 'id' | 'name' | 'tag'>;

/** A create refused for the owner's cap: how many plants the owner has, and how many the write would add. */
export interface OverCap {
  over: { count: number; adding: number };
}

/** What a batch did, in its savepoint: all stored, or nothing (the first conflict, or the cap). */
export type BatchResult =
  { kind: 'stored'; outcomes: ('created' | 'replayed')[] } | { kind: 'conflict'; index: number } | OverCap;

interface StoredPlant {
  name: string;
  tag: string | null;
}

/** Inserts a plant unless the owner has its id already (then changes = 0). */
export const INSERT_PLANT =
  'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING';

/**
 * The plant writes as plain statements on one connection, by kind
 * (write-kinds.ts); the caller owns the transaction. A write that changed a
 * plant also logs its event (one row in plant_events, which live streams
 * read and webhook deliveries fan out from), in the same transaction. A
 * batch runs in a savepoint of its own, so that when it stores nothing (a
 * conflict, the cap) the other writes of the same transaction keep theirs.
 * maxPlants: the owner's cap (--max-plants-per-owner); absent for none.
 */
export function plantWrites(db: Database.Database) {
  const insert = db.prepare<[string, bigint, string, string | null]>(INSERT_PLANT);
  const find = db.prepare<[string, bigint], StoredPlant>('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
  // Counted only up to the cap (plus one), so a check costs at most the cap's rows of the index.
  const countUpTo = db
    .prepare<[string, number], number>(`SELECT count(*) FROM (SELECT 1 FROM plants WHERE owner = ? ${boundLimit('?')})`)
    .pluck();
  const count = db.prepare<[string], number>('SELECT count(*) FROM plants WHERE owner = ?').pluck();
  const savepoint = db.prepare('SAVEPOINT plant_batch');
  const release = db.prepare('RELEASE plant_batch');
  const rollback = db.prepare('ROLLBACK TO plant_batch');
  const remove = db
    .prepare<[string, bigint], bigint>('DELETE FROM plants WHERE owner = ? AND id = ? RETURNING seq')
    .pluck()
    .safeIntegers(true);
  const log = db.prepare<[string, string, bigint, string | null, string | null, number]>(
    'INSERT INTO plant_events (owner, type, plant_id, name, tag, occurred_at) VALUES (?, ?, ?, ?, ?, ?)',
  );
  const create = (owner: string, { id, name, tag }: PlantRow): CreateOutcome => {
    if (insert.run(owner, id, name, tag).changes === 1) {
      log.run(owner, 'plant.created', id, name, tag, Date.now());
      return 'created';
    }
    // A replay or a conflict changed nothing, so it is no event.
    const existing = find.get(owner, id);
    return existing && existing.name === name && existing.tag === tag ? 'replayed' : 'conflict';
  };
  const createOne = (op: PlantRow & { owner: string; maxPlants?: number | undefined }): CreateOutcome | OverCap => {
    // A replay or a conflict stores nothing, so only a new id is checked against the cap.
    if (op.maxPlants !== undefined && find.get(op.owner, op.id) === undefined) {
      if (countUpTo.get(op.owner, op.maxPlants)! >= op.maxPlants)
        return { over: { count: count.get(op.owner)!, adding: 1 } };
    }
    return create(op.owner, op);
  };
  const createBatch = (op: { owner: string; plants: PlantRow[]; maxPlants?: number | undefined }): BatchResult => {
    savepoint.run();
    try {
      const outcomes: ('created' | 'replayed')[] = new Array(op.plants.length);
      let adding = 0;
      for (let index = 0; index < op.plants.length; index++) {
        const outcome = create(op.owner, op.plants[index]!);
        if (outcome === 'conflict') {
          rollback.run();
          release.run();
          return { kind: 'conflict', index };
        }
        if (outcome === 'created') adding++;
        outcomes[index] = outcome;
      }
      if (op.maxPlants !== undefined && adding > 0 && countUpTo.get(op.owner, op.maxPlants + 1)! > op.maxPlants) {
        const total = count.get(op.owner)!;
        rollback.run();
        release.run();
        return { over: { count: total - adding, adding } };
      }
      release.run();
      return { kind: 'stored', outcomes };
    } catch (error) {
      // Undo the batch's part, unless the error ended the whole transaction already (group-commit.ts).
      if (db.inTransaction) {
        rollback.run();
        release.run();
      }
      throw error;
    }
  };
  /** The seq of the plant it deleted, if one was there. */
  const deleteOne = (op: { owner: string; id: bigint }): bigint | undefined => {
    const seq = remove.get(op.owner, op.id);
    if (seq === undefined) return undefined;
    log.run(op.owner, 'plant.deleted', op.id, null, null, Date.now());
    return seq;
  };
  return { create: createOne, 'create-batch': createBatch, delete: deleteOne };
}

/**
 * The owner whose list pages a committed write changed, for list page reuse
 * (change-epoch.ts), or undefined: a replayed or conflicting create, a delete
 * that found nothing, and every write that is not of plants leave pages as
 * they were. A create only appends.
 */
export function writtenOwner(op: { kind: string; owner?: string }, result: unknown): WrittenOwner | undefined {
  const { owner } = op;
  if (owner === undefined) return undefined;
  switch (op.kind) {
    case 'create':
      return result === 'created' ? { owner, appended: true } : undefined;
    case 'create-batch': {
      const batch = result as BatchResult;
      const created = 'kind' in batch && batch.kind === 'stored' && batch.outcomes.includes('created');
      return created ? { owner, appended: true } : undefined;
    }
    case 'delete':
      return typeof result === 'bigint' ? { owner, appended: false, deleted: result } : undefined;
    default:
      return undefined;
  }
}

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
  const head = db
    .prepare<[number], [bigint, bigint]>(`SELECT id, occurred_at FROM plant_events ORDER BY id ${boundLimit('?')}`)
    .raw(true)
    .safeIntegers(true);
  const newest = db.prepare<[], bigint | null>('SELECT max(id) FROM plant_events').pluck().safeIntegers(true);
  const lastRemoved = db
    .prepare<[bigint], bigint | null>('SELECT max(id) FROM plant_events WHERE id <= ?')
    .pluck()
    .safeIntegers(true);
  const mark = db.prepare<[bigint]>('UPDATE plant_events_pruned SET up_to = max(up_to, ?)');
  const remove = db.prepare<[bigint]>('DELETE FROM plant_events WHERE id <= ?');
  // An owner's mark at or below the mark of pruning by age says nothing more.
  const forgetMarks = db.prepare(
    'DELETE FROM plant_events_owner_pruned WHERE up_to <= (SELECT up_to FROM plant_events_pruned)',
  );
  const logged = db
    .prepare<[bigint, number], [string, bigint, bigint]>(
      `SELECT owner, max(id), count(*) FROM (SELECT owner, id FROM plant_events WHERE id > ? ORDER BY id ${boundLimit('?')}) GROUP BY owner`,
    )
    .raw(true)
    .safeIntegers(true);
  // The newest event of the owner beyond its `keep` newest ones: counted, as ids need not be dense.
  const ownerBeyondKept = db
    .prepare<[string, number], bigint>('SELECT id FROM plant_events WHERE owner = ? ORDER BY id DESC LIMIT 1 OFFSET ?')
    .pluck()
    .safeIntegers(true);
  const ownerChunkEnd = db
    .prepare<[string, number], bigint | null>(
      `SELECT max(id) FROM (SELECT id FROM plant_events WHERE owner = ? ORDER BY id ${boundLimit('?')})`,
    )
    .pluck()
    .safeIntegers(true);
  const markOwner = db.prepare<[string, bigint]>(
    'INSERT INTO plant_events_owner_pruned (owner, up_to) VALUES (?, ?) ON CONFLICT (owner) DO UPDATE SET up_to = max(up_to, excluded.up_to)',
  );
  const removeOwner = db.prepare<[string, bigint]>('DELETE FROM plant_events WHERE owner = ? AND id <= ?');
  // Failed deliveries go with the events of their age (the partial index webhook_deliveries_failed).
  const forgetFailed = db.prepare<[number]>('DELETE FROM webhook_deliveries WHERE failed_at < ?');
  // Webhook delivery's needs: the events not yet fanned out (when an
  // endpoint could want them), and every event a delivery refers to, pending
  // or failed. Pruning stops below the oldest of them. With no active
  // endpoint, nothing is to be fanned out: the position moves to the newest.
  const noEndpoint = db
    .prepare<[], number>('SELECT NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE disabled_at IS NULL)')
    .pluck();
  const passFanOut = db.prepare(
    'UPDATE webhook_fan_out SET up_to = max(up_to, coalesce((SELECT max(id) FROM plant_events), 0))',
  );
  const needed = db
    .prepare<[], bigint | null>(
      `SELECT min((SELECT up_to + 1 FROM webhook_fan_out), coalesce((SELECT min(event) FROM webhook_deliveries), ${Number.MAX_SAFE_INTEGER}))`,
    )
    .pluck()
    .safeIntegers(true);
  const ownerNeeded = db
    .prepare<{ owner: string }, bigint | null>(
      `SELECT min(
         coalesce(CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints WHERE owner = @owner AND disabled_at IS NULL)
           THEN (SELECT up_to + 1 FROM webhook_fan_out) END, ${Number.MAX_SAFE_INTEGER}),
         coalesce((SELECT min(d.event) FROM webhook_endpoints e JOIN webhook_deliveries d ON d.endpoint_id = e.id
           WHERE e.owner = @owner), ${Number.MAX_SAFE_INTEGER}))`,
    )
    .pluck()
    .safeIntegers(true);
  const ownerBelow = db
    .prepare<[string, bigint], bigint | null>('SELECT max(id) FROM plant_events WHERE owner = ? AND id < ?')
    .pluck()
    .safeIntegers(true);
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
