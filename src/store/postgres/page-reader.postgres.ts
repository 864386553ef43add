import type pg from 'pg';
import type { CursorCodec, Position } from '../cursor.js';
import { entityTag } from '../entity-tag.js';
import type { JsonPage } from '../store.js';
import { Batcher } from '../batcher.js';
import { operation } from '../operation.js';
import { run, withClient } from './db-connect.postgres.js';

interface PendingPage {
  owner: string;
  /** Only the plants with this tag, for a reader of filtered pages. */
  tag: string | undefined;
  limit: number;
  after: Position | undefined;
  resolve(page: JsonPage): void;
  reject(error: unknown): void;
}

/**
 * A page, computed in SQL: its ordinality in the batch, its JSON body, and
 * the position of its limit-th plant when one more follows; all read as
 * text (`asText`), as Node only passes them on.
 */
type PageRow = [n: string, body: string, at: string | null, id: string | null];

// The pages that are asked for together are read by one statement: one round
// trip and one snapshot for all of them, each page an index range scan of
// its owner's (created_at, id) after its position (a first page starts after
// -infinity).
//
// Each page comes back as the JSON array the response sends, written by
// PostgreSQL as the 200 schema would (to_json escapes as JSON.stringify does),
// so Node neither parses nor serializes it. One more plant than asked for is
// read, to tell whether another page follows; it is left out of the body.
// created_at of the position comes back as an exact integer of
// microseconds, which does not depend on the session's DateStyle or TimeZone.
//
// Locks: none, a read of one snapshot.
function readBatch(name: string, byTag: boolean) {
  return operation<
    [owners: string[], ats: (string | null)[], ids: (string | null)[], limits: number[], tags: (string | null)[]],
    PageRow
  >(
    name,
    `SELECT r.n, '[' || coalesce(p.body, '') || ']',
      CASE WHEN p.count = r.lim THEN p.at END,
      CASE WHEN p.count = r.lim THEN p.id END
    FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::text[]) WITH ORDINALITY AS r(owner, at, id, lim, tag, n)
    CROSS JOIN LATERAL (
      SELECT
        string_agg('{"name":' || to_json(q.name)::text ||
            CASE WHEN q.tag IS NULL THEN '' ELSE ',"tag":' || to_json(q.tag)::text END || '}', ','
            ORDER BY q.k) FILTER (WHERE q.k < r.lim) AS body,
        count(*) AS count,
        min((extract(epoch FROM q.created_at) * 1000000)::int8) FILTER (WHERE q.k = r.lim - 1) AS at,
        min(q.id) FILTER (WHERE q.k = r.lim - 1) AS id
      FROM (
        SELECT name, tag, created_at, id, row_number() OVER (ORDER BY created_at, id) AS k FROM plants
        WHERE owner = r.owner${byTag ? ' AND tag = r.tag' : ''}
          AND (created_at, id) > (
            coalesce(timestamptz 'epoch' + r.at * interval '1 microsecond', '-infinity'),
            coalesce(r.id, -9223372036854775808)
          )
        ORDER BY created_at, id
        LIMIT r.lim
      ) q
    ) p`,
    { rowMode: 'array', asText: true },
  );
}

export const SQL = {
  /** Pages of whole lists: ranges of the (owner, created_at, id) index. */
  readBatch: readBatch('plants_read_batch_json', false),
  /** Pages of the plants with one tag: ranges of the (owner, tag, created_at, id) index. */
  readBatchByTag: readBatch('plants_read_batch_by_tag_json', true),
};

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

  readonly #statement: typeof SQL.readBatch;

  /**
   * `cursors`: the codec that seals the position of a page's last plant into
   * its `next` cursor. `byTag`: this reader reads the pages of filtered lists.
   */
  constructor(
    private readonly pool: pg.Pool,
    private readonly cursors: () => Promise<CursorCodec>,
    byTag = false,
  ) {
    this.#statement = byTag ? SQL.readBatchByTag : SQL.readBatch;
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
  read(owner: string, limit: number, after?: Position, tag?: string): Promise<JsonPage> {
    return new Promise((resolve, reject) => this.#batcher.add({ owner, tag, limit, after, resolve, reject }));
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
    const tags: (string | null)[] = [];
    for (const page of batch) {
      const { owner, tag, limit, after } = page;
      // Three fields without spaces, then the owner (which has none), then the tag: no two pages share a key.
      const position = after ? `${limit} ${after.at} ${after.id} ${owner}` : `${limit} - - ${owner}`;
      const key = tag === undefined ? position : `${position} ${tag}`;
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
      tags.push(tag ?? null);
    }
    try {
      const { rows } = await withClient(this.pool, (client) =>
        run(client, this.#statement, [owners, ats, ids, limits, tags]),
      );
      // Pages without a next cursor are answered first: the others wait for
      // the cursor key, and only they fail if it cannot be read.
      const followed: [pages: PendingPage[], body: string, at: string, id: string][] = [];
      for (const [n, body, at, id] of rows) {
        const pages = waiting[Number(n) - 1]!;
        if (at !== null && id !== null) followed.push([pages, body, at, id]);
        else {
          const page = { body, etag: entityTag(body, '') };
          for (const { resolve } of pages) resolve(page);
        }
      }
      if (followed.length === 0) return;
      const codec = await this.cursors();
      for (const [pages, body, at, id] of followed) {
        const { owner, tag } = pages[0]!;
        const next = codec.encode(owner, { at: BigInt(at), id: BigInt(id) }, tag);
        const page = { body, next, etag: entityTag(body, next) };
        for (const { resolve } of pages) resolve(page);
      }
    } catch (error) {
      // Settles every page still waiting (settling one twice does nothing).
      for (const page of batch) page.reject(error);
    }
  }
}
