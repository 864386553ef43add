// How the stores take a row's type from their dialect's table interface
// (sqlite/tables.sqlite.ts, postgres/tables.postgres.ts) instead of
// writing it again beside each statement.

/** The columns `K` of `Row`, in that order, as a statement in array row mode reads them. */
export type ColumnTuple<Row, K extends readonly (keyof Row)[]> = {
  -readonly [I in keyof K]: K[I] extends keyof Row ? Row[K[I]] : never;
};
