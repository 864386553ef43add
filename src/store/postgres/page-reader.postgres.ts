import type pg from 'pg';
import type { PlantPage, PlantRecord } from '../store.js';
import { Batcher } from './batcher.postgres.js';
import type { PgCursorCodec, Position } from './cursor.postgres.js';
import { withClient } from './db-connect.postgres.js';

interface PendingPage {
  owner: string;
  limit: number;
  after: Position | undefined;
  resolve(page: PlantPage): void;
  reject(error: unknown): void;
}

/**
 * One row per page: its ordinality in the batch, its plants as a JSON array
 * of {name, tag?}, and the position of its limit-th plant (the last one
 * returned) when it has one more than asked for; every column as PostgreSQL's text.
 */
type BatchRow = [n: string, plants: string | null, at: string | null, id: string | null];

// The pages that are asked for together are read by one statement: one round
// trip and one snapshot for all of them, each page an index range scan of
// its owner's (created_at, id) after its position (a first page starts after
// -infinity).
//
// Each page comes back as one JSON array, which JSON.parse turns into the
// plants at a fraction of the driver's cost per row and per column. The
// aggregates take the rows in the subquery's order: a plain aggregate over an
// ordered subquery consumes it in order. created_at of the position comes
// back as an exact integer of microseconds, which does not depend on the
// session's DateStyle or TimeZone.
const READ_BATCH = {
  name: 'plants_read_batch',
  text: `SELECT r.n, p.plants,
      CASE WHEN p.count = r.lim THEN (extract(epoch FROM p.ats[r.lim - 1]) * 1000000)::int8 END,
      CASE WHEN p.count = r.lim THEN p.ids[r.lim - 1] END
    FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[]) WITH ORDINALITY AS r(owner, at, id, lim, n)
    CROSS JOIN LATERAL (
      SELECT
        json_agg(CASE WHEN q.tag IS NULL THEN json_build_object('name', q.name)
                      ELSE json_build_object('name', q.name, 'tag', q.tag) END) AS plants,
        count(*) AS count, array_agg(q.created_at) AS ats, array_agg(q.id) AS ids
      FROM (
        SELECT name, tag, created_at, id FROM plants
        WHERE owner = r.owner
          AND (created_at, id) > (
            coalesce(timestamptz 'epoch' + r.at * interval '1 microsecond', '-infinity'),
            coalesce(r.id, -9223372036854775808)
          )
        ORDER BY created_at, id
        LIMIT r.lim
      ) q
    ) p`,
  rowMode: 'array',
  types: { getTypeParser: () => (value: string) => value },
} as const;

const MAX_BATCH = 64;
/**
 * Read statements running at once, at most. Few and larger batches cost
 * less per page than many small ones (measured: two beat one and five), and
 * leave the rest of the pool to writes and token lookups.
 */
const READ_BATCHES_IN_FLIGHT = 2;
// Rows one batch may return: small pages share a statement, a large page
// (1000 rows by default) goes on its own instead of holding others back.
const MAX_BATCH_ROWS = 1100;

/** Reads list pages, gathering concurrent reads into one statement. */
export class PageReader {
  readonly #batcher: Batcher<PendingPage>;

  /** `cursors`: the codec that seals the position of a page's last plant into its `next` cursor. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly cursors: () => Promise<PgCursorCodec>,
  ) {
    this.#batcher = new Batcher((batch) => this.#run(batch), {
      maxItems: MAX_BATCH,
      maxInFlight: Math.min(READ_BATCHES_IN_FLIGHT, pool.options.max),
      weight: (page) => page.limit + 1,
      maxWeight: MAX_BATCH_ROWS,
    });
  }

  /**
   * Up to `limit` plants of `owner` after `after` (from the start without it),
   * in insertion order, with the cursor of the next page when more follow.
   * The page may be shared with other requests: read only.
   */
  read(owner: string, limit: number, after?: Position): Promise<PlantPage> {
    return new Promise((resolve, reject) => this.#batcher.add({ owner, limit, after, resolve, reject }));
  }

  async #run(batch: PendingPage[]): Promise<void> {
    // Pages asked for twice in one batch (the same owner, position and
    // limit) are read, and their cursor sealed, once: the batch is one
    // statement and one snapshot, so both requests would get the same plants
    // anyway.
    const slots = new Map<string, number>();
    const waiting: PendingPage[][] = [];
    const owners: string[] = [];
    const ats: (string | null)[] = [];
    const ids: (string | null)[] = [];
    const limits: number[] = [];
    for (const page of batch) {
      const { owner, limit, after } = page;
      // Three fields without spaces, then the owner: no two pages share a key.
      const key = after ? `${limit} ${after.at} ${after.id} ${owner}` : `${limit} - - ${owner}`;
      const slot = slots.get(key);
      if (slot !== undefined) {
        waiting[slot]!.push(page);
        continue;
      }
      slots.set(key, waiting.length);
      waiting.push([page]);
      owners.push(owner);
      ats.push(after ? after.at.toString() : null);
      ids.push(after ? after.id.toString() : null);
      limits.push(limit + 1);
    }
    try {
      const { rows } = await withClient(this.pool, (client) =>
        client.query<BatchRow>({ ...READ_BATCH, values: [owners, ats, ids, limits] }),
      );
      // Pages without a next cursor are answered first: the others wait for
      // the cursor key, and only they fail if it cannot be read.
      const followed: [pages: PendingPage[], plants: PlantRecord[], at: string, id: string][] = [];
      for (const [n, json, at, id] of rows) {
        const pages = waiting[Number(n) - 1]!;
        const limit = pages[0]!.limit;
        // One more than asked for was read: it says that another page follows.
        const plants = json === null ? [] : (JSON.parse(json) as PlantRecord[]);
        if (plants.length > limit) {
          plants.length = limit;
          followed.push([pages, plants, at!, id!]);
        } else for (const { resolve } of pages) resolve({ plants });
      }
      if (followed.length === 0) return;
      const codec = await this.cursors();
      for (const [pages, plants, at, id] of followed) {
        const page = { plants, next: codec.encode(pages[0]!.owner, { at: BigInt(at), id: BigInt(id) }) };
        for (const { resolve } of pages) resolve(page);
      }
    } catch (error) {
      // Settles every page still waiting (settling one twice does nothing).
      for (const page of batch) page.reject(error);
    }
  }
}
