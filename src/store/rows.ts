import type { PlantEvent } from './store.js';

// How the stores take a row's type from their dialect's table interface
// (sqlite/tables.sqlite.ts, postgres/tables.postgres.ts) instead of
// writing it again beside each statement.

/** The columns `K` of `Row`, in that order, as a statement in array row mode reads them. */
export type ColumnTuple<Row, K extends readonly (keyof Row)[]> = {
  -readonly [I in keyof K]: K[I] extends keyof Row ? Row[K[I]] : never;
};

/** An event as both event logs read it in array mode: its columns in order, occurred_at in milliseconds as a bigint. */
type EventTuple = [
  id: PlantEvent['id'],
  owner: PlantEvent['owner'],
  type: PlantEvent['type'],
  plantId: PlantEvent['plantId'],
  name: PlantEvent['name'],
  tag: PlantEvent['tag'],
  occurredAtMs: bigint,
];

export const toPlantEvent = ([id, owner, type, plantId, name, tag, at]: EventTuple): PlantEvent => ({
  id,
  owner,
  type,
  plantId,
  name,
  tag,
  occurredAt: Number(at),
});
