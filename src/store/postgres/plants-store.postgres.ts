import type pg from 'pg';
import { CursorCodec } from '../cursor.js';
import {
  repeatedId,
  type BatchOutcome,
  type CreateOutcome,
  type JsonPage,
  type NewPlantRecord,
  type PlantFilter,
  type PlantLimits,
  type PlantRecord,
  type PlantStore,
} from '../store.js';
import { createBatch } from './batch-create.postgres.js';
import { operation } from '../operation.js';
import { inTransaction, run, withClient, writeWithClient } from './db-connect.postgres.js';
import { lockOwner, logEvent } from './event-log.postgres.js';
import { CREATE_ATTEMPTS, InsertBatcher, raceError } from './insert-batcher.postgres.js';
import { PageReader } from './page-reader.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

type Plant = PostgresRow<'plants'>;

// The plant operations on the pool, besides the batched ones
// (insert-batcher.postgres.ts, page-reader.postgres.ts, batch-create.postgres.ts).
// Locks: a read takes none (a snapshot). A create or delete first takes the
// owner's advisory lock (lockOwner, event-log.postgres.ts: its events' ids
// then follow the order of its owner's commits), then the row lock of the
// plant it writes; ON CONFLICT makes a second insert of an (owner, id) a
// no-op instead of an error. The import logs no events, which are what the
// owner's lock orders: it takes only the locks of the rows it inserts.
const SQL = {
  // One round trip: insert (with its event), or read back the row that
  // blocked the insert (a replay or a conflict, which are no events).
  create: operation<
    [owner: string, id: string, name: string, tag: string | null],
    { created: boolean; name: Plant['name'] | null; tag: Plant['tag'] }
  >(
    'plants_create',
    `WITH locked AS MATERIALIZED (${lockOwner('$1::text')}
    ), inserted AS (
      INSERT INTO plants (owner, id, name, tag) SELECT $1::text, $2::int8, $3::text, $4::text FROM locked
      ON CONFLICT (owner, id) DO NOTHING
      RETURNING true AS created
    ), logged AS (${logEvent('plant.created', 'inserted', '$1::text', '$2::int8', '$3::text', '$4::text')}
    )
    SELECT created, NULL::text AS name, NULL::text AS tag FROM inserted
    UNION ALL
    SELECT false, name, tag FROM plants
    WHERE owner = $1::text AND id = $2::int8 AND NOT EXISTS (SELECT FROM inserted)`,
  ),
  /** `deleted`: 1 when the plant was there, counted in SQL. */
  delete: operation<[owner: string, id: string], { deleted: number }>(
    'plants_delete',
    `WITH locked AS MATERIALIZED (${lockOwner('$1::text')}
    ), deleted AS (
      DELETE FROM plants WHERE owner = $1::text AND id = $2::int8 AND EXISTS (SELECT FROM locked) RETURNING id
    ), logged AS (${logEvent('plant.deleted', 'deleted', '$1::text', 'deleted.id', 'NULL::text', 'NULL::text')}
    )
    SELECT count(*)::int AS deleted FROM deleted`,
  ),
  // WITH ORDINALITY + ORDER BY stamps created_at in the order the caller gave.
  insertMany: operation<[owner: string, ids: string[], names: string[], tags: (string | null)[]]>(
    'plants_insert_many',
    `INSERT INTO plants (owner, id, name, tag)
    SELECT $1::text, p.id, p.name, p.tag
    FROM unnest($2::int8[], $3::text[], $4::text[]) WITH ORDINALITY AS p(id, name, tag, n)
    ORDER BY p.n
    ON CONFLICT (owner, id) DO NOTHING`,
  ),
  /** One plant by its id: the (owner, id) primary key. */
  get: operation<[owner: string, id: string], Pick<Plant, 'name' | 'tag'>>(
    'plants_get',
    'SELECT name, tag FROM plants WHERE owner = $1::text AND id = $2::int8',
  ),
  cursorKey: operation<[], Pick<PostgresRow<'secrets'>, 'value'>>(
    'secrets_cursor_key',
    "SELECT value FROM secrets WHERE name = 'cursor_key'",
  ),
};
const INSERT_MANY_BATCH = 5000;

export class PostgresPlantStore implements PlantStore {
  #codec: Promise<CursorCodec> | undefined;
  readonly #inserts: InsertBatcher;
  readonly #pages: PageReader;
  readonly #pagesByTag: PageReader;

  constructor(private readonly pool: pg.Pool) {
    this.#inserts = new InsertBatcher(pool, (owner, plant) => this.#createOne(owner, plant));
    this.#pages = new PageReader(pool, () => this.#cursors());
    this.#pagesByTag = new PageReader(pool, () => this.#cursors(), true);
  }

  /** The cursor codec, its key read from the database once (again after a failure). */
  #cursors(): Promise<CursorCodec> {
    if (this.#codec === undefined) {
      const loading = withClient(this.pool, (client) => run(client, SQL.cursorKey, [])).then(({ rows }) => {
        if (rows[0] === undefined) throw new Error('the secrets table has no cursor_key: run plant-store migrate');
        return new CursorCodec(rows[0].value);
      });
      this.#codec = loading;
      loading.catch(() => {
        if (this.#codec === loading) this.#codec = undefined;
      });
    }
    return this.#codec;
  }

  async create(owner: string, plant: NewPlantRecord, limits?: PlantLimits): Promise<CreateOutcome> {
    if (limits?.maxPlants === undefined) return this.#inserts.create(owner, plant);
    // The count and the insert under the owner's lock, which the batched statement cannot hold across both.
    const outcome = await createBatch(this.pool, owner, [plant], limits.maxPlants);
    return outcome.kind === 'stored' ? outcome.outcomes[0]! : 'conflict';
  }

  async createMany(owner: string, plants: readonly NewPlantRecord[], limits?: PlantLimits): Promise<BatchOutcome> {
    const repeated = repeatedId(plants);
    if (repeated) return { kind: 'repeated', ...repeated };
    return createBatch(this.pool, owner, plants, limits?.maxPlants);
  }

  /** One create on its own statement, for the batches that cannot take it. */
  async #createOne(owner: string, plant: NewPlantRecord): Promise<CreateOutcome> {
    const tag = plant.tag ?? null;
    const values: [string, string, string, string | null] = [owner, plant.id.toString(), plant.name, tag];
    const outcome = await writeWithClient(this.pool, async (client): Promise<CreateOutcome | undefined> => {
      // No row back means the insert hit a row committed after this
      // statement's snapshot (a racing create), so the read could not see it;
      // or that row was deleted again. A new statement has a new snapshot:
      // repeat until one either inserts or sees the row it collided with,
      // at most CREATE_ATTEMPTS times.
      for (let attempt = 1; attempt <= CREATE_ATTEMPTS; attempt++) {
        const { rows } = await run(client, SQL.create, values);
        const row = rows[0];
        if (row === undefined) continue;
        if (row.created) return 'created';
        return row.name === plant.name && row.tag === tag ? 'replayed' : 'conflict';
      }
      return undefined;
    });
    // Thrown outside withClient, which would otherwise discard a healthy
    // connection. Answered as 503: the request was fine, but the store could
    // not settle this id right now; a retry will.
    if (outcome === undefined) throw raceError();
    return outcome;
  }

  async page(owner: string, limit: number, cursor?: string, filter?: PlantFilter): Promise<JsonPage> {
    const tag = filter?.tag;
    const after = cursor === undefined ? undefined : (await this.#cursors()).decode(owner, cursor, tag);
    return tag === undefined ? this.#pages.read(owner, limit, after) : this.#pagesByTag.read(owner, limit, after, tag);
  }

  async get(owner: string, id: bigint): Promise<PlantRecord | undefined> {
    const { rows } = await withClient(this.pool, (client) => run(client, SQL.get, [owner, id.toString()]));
    const row = rows[0];
    if (row === undefined) return undefined;
    return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
  }

  async delete(owner: string, id: bigint): Promise<boolean> {
    const { rows } = await writeWithClient(this.pool, (client) => run(client, SQL.delete, [owner, id.toString()]));
    return rows[0]?.deleted === 1;
  }

  insertMany(owner: string, plants: Iterable<NewPlantRecord>): Promise<number> {
    return writeWithClient(this.pool, (client) =>
      inTransaction(client, async () => {
        let inserted = 0;
        let ids: string[] = [];
        let names: string[] = [];
        let tags: (string | null)[] = [];
        const flush = async () => {
          if (ids.length === 0) return;
          const r = await run(client, SQL.insertMany, [owner, ids, names, tags]);
          inserted += r.rowCount ?? 0;
          ids = [];
          names = [];
          tags = [];
        };
        for (const p of plants) {
          ids.push(p.id.toString());
          names.push(p.name);
          tags.push(p.tag ?? null);
          if (ids.length === INSERT_MANY_BATCH) await flush();
        }
        await flush();
        return inserted;
      }),
    );
  }
}
