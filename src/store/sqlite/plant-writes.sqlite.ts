import type Database from 'better-sqlite3';
import type { CreateOutcome } from '../store.js';

export type WriteOp =
  | { kind: 'create'; owner: string; id: bigint; name: string; tag: string | null }
  | { kind: 'delete'; owner: string; id: bigint };

/** What each kind of write answers: a create its outcome, a delete whether a plant was there. */
export interface WriteResults {
  create: CreateOutcome;
  delete: boolean;
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

/** The plant writes as plain statements on one connection; the caller owns the transaction. */
export function plantWriter(db: Database.Database): (op: WriteOp) => WriteResult {
  const insert = db.prepare<[string, bigint, string, string | null]>(INSERT_PLANT);
  const find = db.prepare<[string, bigint], PlantRow>('SELECT name, tag FROM plants WHERE owner = ? AND id = ?');
  const remove = db.prepare<[string, bigint]>('DELETE FROM plants WHERE owner = ? AND id = ?');
  return (op) => {
    if (op.kind === 'delete') return remove.run(op.owner, op.id).changes === 1;
    if (insert.run(op.owner, op.id, op.name, op.tag).changes === 1) return 'created';
    const existing = find.get(op.owner, op.id);
    return existing && existing.name === op.name && existing.tag === op.tag ? 'replayed' : 'conflict';
  };
}
