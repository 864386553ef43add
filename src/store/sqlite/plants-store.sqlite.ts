import type Database from 'better-sqlite3';
import { dbQueryDuration, metricsOn } from '../../metrics/metrics.js';
import { CursorCodec } from '../cursor.js';
import {
  StoreUnavailableError,
  TooManyPlantsError,
  repeatedId,
  type BatchOutcome,
  type CreateOutcome,
  type JsonPage,
  type NewPlantRecord,
  type PlantFilter,
  type PlantRecord,
  type PlantLimits,
  type PlantStore,
} from '../store.js';
import { entityTag } from '../entity-tag.js';
import type { ChangeEpoch } from './change-epoch.js';
import { ListPages, type ReadPage } from './page-cache.js';
import { operation } from '../operation.js';
import { prepareAll, type Prepared } from './db-connect.sqlite.js';
import { SQL as WRITE_SQL } from './plant-writes.sqlite.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';
import type { WriterThread } from './writer-thread.js';
import { boundLimit } from './bound-limit.js';

type Seq = SafeIntegers<SqliteRow<'plants'>>['seq'];
/**
 * A page as one row: its plants as the JSON array of the 200 response
 * (computed in SQL, no column of the table), the seq of its last plant, and
 * that of the plant after it, if any.
 */
type PageRow = [body: string, last: Seq | null, following: Seq | null];
type PageParams = { owner: string; after: bigint; limit: number };

const queryTime = dbQueryDuration.series('sqlite');

// SQLite writes each page as the JSON the 200 schema would: no object per
// row, and no serialization in JavaScript. json_object escapes as
// JSON.stringify does (test/plants-api/list-page-json.test.ts). A full page
// asks whether one more plant follows. The inner query cannot be flattened
// (it has a LIMIT), so SQLite runs it as a co-routine that hands the
// aggregate its rows in seq order; an ORDER BY inside group_concat would sort
// them again in a temporary b-tree, a quarter of the page's cost. The plant
// after a full page is named, not just known to exist: if it is deleted, the
// page may have lost its next page (see ReadPage.span).
function page<Params extends object>(name: string, byTag: boolean) {
  const where = `owner = @owner${byTag ? ' AND tag = @tag' : ''}`;
  return operation<[Params], PageRow>(
    name,
    `SELECT p.body, p.last,
    CASE WHEN p.n = @limit THEN (SELECT seq FROM plants WHERE ${where} AND seq > p.last ORDER BY seq LIMIT 1) END
  FROM (
    SELECT '[' || coalesce(group_concat(q.plant, ','), '') || ']' AS body, max(q.seq) AS last, count(*) AS n
    FROM (
      SELECT seq, CASE WHEN tag IS NULL THEN json_object('name', name) ELSE json_object('name', name, 'tag', tag) END AS plant
      FROM plants WHERE ${where} AND seq > @after ORDER BY seq ${boundLimit('@limit')}
    ) q
  ) p`,
    { rowMode: 'array', bigints: true },
  );
}

// The plant operations of the main thread's connection; the writes are the
// writer thread's (plant-writes.sqlite.ts). Locks: a read takes none (one
// statement, one WAL snapshot: a page is of one moment). The import's
// inserts are one transaction on this connection, which takes SQLite's
// write lock at its first insert (waiting up to busy_timeout while the
// writer thread holds it) and keeps it to the commit.
export const SQL = {
  /** A page of a list: a range of the (owner, seq) index. */
  page: page<PageParams>('plants_page', false),
  /** A page of the plants with one tag: a range of the (owner, tag, seq) index. */
  pageByTag: page<PageParams & { tag: string }>('plants_page_by_tag', true),
  get: WRITE_SQL.get,
  /** The import's, once per plant (PostgreSQL's plants_insert_many takes thousands a statement). */
  insert: WRITE_SQL.insert,
  cursorKey: operation<[], Pick<SqliteRow<'secrets'>, 'value'>>(
    'secrets_cursor_key',
    "SELECT value FROM secrets WHERE name = 'cursor_key'",
  ),
};

export class SqlitePlantStore implements PlantStore {
  readonly #sql: Prepared<typeof SQL>;
  readonly #cursors: CursorCodec;
  readonly #pages: ListPages;

  /**
   * Reads use `db`; writes go to the writer thread, which has a connection of
   * its own. `listCacheBytes`: memory for reusing unchanged list pages (0: none).
   */
  constructor(
    private readonly db: Database.Database,
    private readonly writer: WriterThread,
    private readonly changes: ChangeEpoch,
    listCacheBytes: number,
  ) {
    this.#sql = prepareAll(db, SQL);
    const key = this.#sql.cursorKey.get();
    this.#cursors = new CursorCodec(key!.value);
    this.#pages = new ListPages(changes, listCacheBytes, (owner, limit, cursor, tag) =>
      this.#read(owner, limit, cursor, tag),
    );
  }

  // A closed store (shutting down) is unavailable, like an unreachable database.
  #ensureOpen(): void {
    if (!this.db.open) throw new StoreUnavailableError(new Error('the SQLite store is closed'));
  }

  async create(owner: string, plant: NewPlantRecord, limits?: PlantLimits): Promise<CreateOutcome> {
    this.#ensureOpen();
    const outcome = await this.writer.run({
      kind: 'create',
      owner,
      id: plant.id,
      name: plant.name,
      tag: plant.tag ?? null,
      maxPlants: limits?.maxPlants,
    });
    if (typeof outcome === 'object') throw new TooManyPlantsError(outcome.over.count, limits!.maxPlants!, 1);
    return outcome;
  }

  // One write of the writer thread, in a savepoint of its own within the group commit.
  async createMany(owner: string, plants: readonly NewPlantRecord[], limits?: PlantLimits): Promise<BatchOutcome> {
    this.#ensureOpen();
    const repeated = repeatedId(plants);
    if (repeated) return { kind: 'repeated', ...repeated };
    const result = await this.writer.run({
      kind: 'create-batch',
      owner,
      plants: plants.map((p) => ({ id: p.id, name: p.name, tag: p.tag ?? null })),
      maxPlants: limits?.maxPlants,
    });
    if ('over' in result) throw new TooManyPlantsError(result.over.count, limits!.maxPlants!, result.over.adding);
    return result;
  }

  // Answered without a promise: SQLite reads in this thread, and most pages come from memory.
  page(owner: string, limit: number, cursor?: string, filter?: PlantFilter): JsonPage | Promise<JsonPage> {
    try {
      this.#ensureOpen();
      // The writer thread's answers first: the owners it wrote, another connection's commits.
      this.writer.poll();
      return this.#pages.page(owner, limit, cursor, filter?.tag);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #read(owner: string, limit: number, cursor: string | undefined, tag: string | undefined): ReadPage {
    const after = cursor === undefined ? 0n : this.#cursors.decode(owner, cursor, tag).at;
    const started = metricsOn ? performance.now() : 0;
    const row =
      tag === undefined
        ? this.#sql.page.get({ owner, after, limit })
        : this.#sql.pageByTag.get({ owner, tag, after, limit });
    const [body, last, following] = row!;
    if (metricsOn) queryTime.observe((performance.now() - started) / 1000);
    if (following === null)
      return { page: { body, etag: entityTag(body, '') }, span: { from: after, to: last ?? after } };
    const next = this.#cursors.encode(owner, { at: last!, id: 0n }, tag);
    return { page: { body, next, etag: entityTag(body, next) }, span: { from: after, to: following } };
  }

  async get(owner: string, id: bigint): Promise<PlantRecord | undefined> {
    this.#ensureOpen();
    this.writer.poll();
    const row = this.#sql.get.get(owner, id);
    if (row === undefined) return undefined;
    return row.tag === null ? { name: row.name } : { name: row.name, tag: row.tag };
  }

  async delete(owner: string, id: bigint): Promise<boolean> {
    this.#ensureOpen();
    return (await this.writer.run({ kind: 'delete', owner, id })) !== undefined;
  }

  async insertMany(owner: string, plants: Iterable<NewPlantRecord>): Promise<number> {
    this.#ensureOpen();
    let n = 0;
    this.db.transaction(() => {
      for (const p of plants) n += this.#sql.insert.run(owner, p.id, p.name, p.tag ?? null).changes;
    })();
    if (n > 0) this.changes.bump(owner);
    return n;
  }
}
