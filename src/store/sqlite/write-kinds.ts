import type Database from 'better-sqlite3';
import { outboxWrites } from './outbox-writes.sqlite.js';
import { eventPruner } from './event-prune.sqlite.js';
import { plantWrites } from './plant-writes.sqlite.js';

/**
 * Every kind of write the writer thread runs, by name: the function run in
 * the group commit's transaction, made on the writer's connection. A kind is
 * declared here once (or in the writes it spreads): the message that carries
 * it (WriteOp), what it answers (WriteResults) and WriterThread.run's types
 * all come from its function.
 */
export function writeKinds(db: Database.Database) {
  return { ...plantWrites(db), ...outboxWrites(db), 'events-prune': eventPruner(db) };
}

type Kinds = ReturnType<typeof writeKinds>;
export type WriteKind = keyof Kinds;

/** A write as it goes to the writer thread: its kind, and what that kind's function takes. */
export type WriteOp = { [K in WriteKind]: { kind: K } & Parameters<Kinds[K]>[0] }[WriteKind];
/** What each kind of write answers. */
export type WriteResults = { [K in WriteKind]: ReturnType<Kinds[K]> };
export type WriteResult = WriteResults[WriteKind];

/** Why a write failed, as it crosses from the writer thread (an Error does not keep its code there). */
export interface WriteFailure {
  message: string;
  code: string | undefined;
}

/** One write on `db`, run by its kind's function. */
export function writer(db: Database.Database): (op: WriteOp) => WriteResult {
  const kinds = writeKinds(db);
  return (op) => (kinds[op.kind] as (op: WriteOp) => WriteResult)(op);
}
