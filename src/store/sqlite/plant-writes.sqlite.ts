import type Database from 'better-sqlite3';
import type { CreateOutcome } from '../store.js';
import { operation } from '../operation.js';
import type { WrittenOwner } from './change-epoch.js';
import { prepareAll } from './db-connect.sqlite.js';
import { boundLimit } from './bound-limit.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';

/** A plant as a create carries it to the writer thread. */
export type PlantRow = Pick<SqliteRow<'plants'>, 'id' | 'name' | 'tag'>;
/** A plant as it is stored: what a replay must match. */
export type StoredPlant = Pick<SqliteRow<'plants'>, 'name' | 'tag'>;
type Seq = SafeIntegers<SqliteRow<'plants'>>['seq'];

/** A create refused for the owner's cap: how many plants the owner has, and how many the write would add. */
export interface OverCap {
  over: { count: number; adding: number };
}

/** What a batch did, in its savepoint: all stored, or nothing (the first conflict, or the cap). */
export type BatchResult =
  { kind: 'stored'; outcomes: ('created' | 'replayed')[] } | { kind: 'conflict'; index: number } | OverCap;

// The plant operations of the writer thread's connection (and the two that
// plants-store.sqlite.ts also prepares on the main thread's). Locks: each
// runs inside the group commit's transaction, which took SQLite's write lock
// at BEGIN IMMEDIATE (group-commit.ts): there is one writer, so a read here
// sees every plant there is until the commit, and a check and the write it
// guards cannot race. PostgreSQL, with writers side by side, needs the
// owner's advisory lock for the same (plants-store.postgres.ts).
export const SQL = {
  /** Inserts a plant unless the owner has its id already (then changes = 0): the (owner, id) unique index. */
  insert: operation<[owner: string, id: bigint, name: string, tag: string | null]>(
    'plants_insert',
    'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING',
  ),
  /** One plant by its id: the (owner, id) unique index. */
  get: operation<[owner: string, id: bigint], StoredPlant>(
    'plants_get',
    'SELECT name, tag FROM plants WHERE owner = ? AND id = ?',
  ),
  /** Counted only up to the cap (plus one), so a check costs at most the cap's rows of the index. */
  countUpTo: operation<[owner: string, upTo: number], number>(
    'plants_owner_count_up_to',
    `SELECT count(*) FROM (SELECT 1 FROM plants WHERE owner = ? ${boundLimit('?')})`,
    { rowMode: 'value' },
  ),
  /** Exactly, only for the message of a refusal. */
  count: operation<[owner: string], number>('plants_owner_count', 'SELECT count(*) FROM plants WHERE owner = ?', {
    rowMode: 'value',
  }),
  /** A batch's own savepoint, so that a batch that stores nothing leaves the other writes of the transaction theirs. */
  savepoint: operation<[]>('plants_batch_savepoint', 'SAVEPOINT plant_batch'),
  release: operation<[]>('plants_batch_release', 'RELEASE plant_batch'),
  rollback: operation<[]>('plants_batch_rollback', 'ROLLBACK TO plant_batch'),
  /** The seq of the plant deleted: the list pages it was on (change-epoch.ts). */
  delete: operation<[owner: string, id: bigint], Seq>(
    'plants_delete',
    'DELETE FROM plants WHERE owner = ? AND id = ? RETURNING seq',
    { rowMode: 'value', bigints: true },
  ),
  /** The event of a write that changed a plant; ids come from the one writer, in commit order. */
  logEvent: operation<
    [owner: string, type: string, plantId: bigint, name: string | null, tag: string | null, occurredAt: number]
  >(
    'plant_events_log',
    'INSERT INTO plant_events (owner, type, plant_id, name, tag, occurred_at) VALUES (?, ?, ?, ?, ?, ?)',
  ),
};

/**
 * The plant writes on one connection, by kind (write-kinds.ts), over SQL's
 * operations; the caller owns the transaction. A write that changed a
 * plant also logs its event (one row in plant_events, which live streams
 * read and webhook deliveries fan out from), in the same transaction. A
 * batch runs in a savepoint of its own, so that when it stores nothing (a
 * conflict, the cap) the other writes of the same transaction keep theirs.
 * maxPlants: the owner's cap (--max-plants-per-owner); absent for none.
 */
export function plantWrites(db: Database.Database) {
  const {
    insert,
    get: find,
    countUpTo,
    count,
    savepoint,
    release,
    rollback,
    delete: remove,
    logEvent: log,
  } = prepareAll(db, SQL);
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
