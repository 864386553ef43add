// One SQL statement of a store as a named unit (graphile-worker's src/sql/
// is the model): its name, its text and the types of its parameters and of
// the row it reads, declared beside the comment that says which locks it
// takes and why. Both stores name the same operation alike. Each store runs
// them its own way: SQLite prepares each once (`prepareAll` in
// sqlite/db-connect.sqlite.ts), PostgreSQL sends each as a named prepared
// statement (`run` in postgres/db-connect.postgres.ts).

export interface Operation<Params extends readonly unknown[], Row> {
  /** Unique in the store: PostgreSQL prepares the statement under this name on each connection. */
  readonly name: string;
  readonly text: string;
  /** How a row is read: an object (the default), an array of its columns in order, or its first column's value (SQLite). */
  readonly rowMode?: 'array' | 'value' | undefined;
  /** SQLite: every INTEGER read as a bigint, for int64 (PostgreSQL's pools read every int8 so). */
  readonly bigints?: true | undefined;
  /** PostgreSQL: every column read as the text PostgreSQL sent, unparsed (for values passed on as they are). */
  readonly asText?: true | undefined;
  /** Never set: carries the types to the call. */
  readonly types?: { params: Params; row: Row };
}

/** Declares an operation; `Row` is what one row reads as (void for a statement that reads none). */
export function operation<Params extends readonly unknown[], Row = void>(
  name: string,
  text: string,
  reading: Pick<Operation<Params, Row>, 'rowMode' | 'bigints' | 'asText'> = {},
): Operation<Params, Row> {
  return { name, text, ...reading };
}
