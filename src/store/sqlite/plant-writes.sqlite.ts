import type Database from 'better-sqlite3';
import type { CreateOutcome } from '../store.js';
import { eventRecorder, type OutboxOp, type OutboxResults } from './outbox-writes.sqlite.js';

export type PlantOp =
  | { kind: 'create'; owner: string; id: bigint; name: string; tag: string | null }
  | { kind: 'delete'; owner: string; id: bigint };

/** Everything the writer thread runs: plant writes, and the outbox's claims and settlements. */
export type WriteOp = PlantOp | OutboxOp;

/** What each kind of write answers: a create its outcome, a delete the seq of the plant it deleted, if one was there. */
export interface WriteResults extends OutboxResults {
  create: CreateOutcome;
  delete: bigint | undefined;
}
export type WriteResult = WriteResults[WriteOp['kind']];

/** Why a write failed, as it crosses from the writer thread (an Error does not keep its code there). */
export interface WriteFailure {
  message: string;
  code: string | undefined;
}

interface PlantRow {
  name: string;
  tag: string | null;
}

/** Inserts a plant unless the owner has its id already (then changes = 0). */
export const INSERT_PLANT =
  'INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING';

/**
 * The plant writes as plain statements on one connection; the caller owns the
 * transaction. A write that changed a plant also records its webhook events,
 * in the same transaction. Call newBatch() before each transaction.
 */
export function plantWriter(db: Database.Database): ((op: PlantOp) => CreateOutcome | bigint | undefined) & {
  newBatch(): void;
} {
  const insert = db.prepare<[string, bigint, string, string | null]>(INSERT_PLANT);
  const find = db.prepare<[string, bigint], PlantRow>('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
  const remove = db
    .prepare<[string, bigint], bigint>('DELETE FROM plants WHERE owner = ? AND id = ? RETURNING seq')
    .pluck()
    .safeIntegers(true);
  const events = eventRecorder(db);
  const write = (op: PlantOp): CreateOutcome | bigint | undefined => {
    if (op.kind === 'delete') {
      const seq = remove.get(op.owner, op.id);
      if (seq !== undefined) events.record('plant.deleted', op.owner, op.id, null, null);
      return seq;
    }
    if (insert.run(op.owner, op.id, op.name, op.tag).changes === 1) {
      events.record('plant.created', op.owner, op.id, op.name, op.tag);
      return 'created';
    }
    // A replay or a conflict changed nothing, so it is no event.
    const existing = find.get(op.owner, op.id);
    return existing && existing.name === op.name && existing.tag === op.tag ? 'replayed' : 'conflict';
  };
  return Object.assign(write, { newBatch: () => events.newBatch() });
}
