import type pg from 'pg';
import { INT64_MAX, INT64_MIN } from '../../schemas/int64.js';
import { StoreUnavailableError, type CreateOutcome, type NewPlantRecord } from '../store.js';
import { Batcher } from '../batcher.js';
import { operation } from '../operation.js';
import { run, writeWithClient } from './db-connect.postgres.js';
import { lockOwners, logEvent, MAX_EVENTS_PER_STATEMENT } from './event-log.postgres.js';
import type { PostgresRow } from './tables.postgres.js';

/** One create as a batch carries it; `attempts` counts the statements that could not settle it. */
interface PendingCreate {
  owner: string;
  plant: NewPlantRecord;
  attempts: number;
  resolve(outcome: CreateOutcome): void;
  reject(error: unknown): void;
}

type Plant = PostgresRow<'plants'>;

// Group commit: the creates that arrive together are inserted by one
// statement, so they share one round trip, one transaction and one WAL flush.
// Rows are inserted in arrival order (created_at is stamped per row, in that
// order), each with its webhook events. Each create gets back its own
// outcome: inserted now, or the row that was there already (read under the
// statement's snapshot, which does not include the rows the statement
// inserts itself). That row is read per create through the (owner, id)
// index: as a LATERAL subquery with a LIMIT, which the planner cannot turn
// into a join. As a join, the plan prepared while the table was small (a new
// deployment, before PostgreSQL has analyzed it) hashes the batch and scans
// the whole table per batch, and keeps doing so as the table grows.
//
// Locks: the owner's advisory lock of every owner in the batch, taken in one
// fixed order (lockOwners, event-log.postgres.ts) before the first insert,
// so two batches sharing owners take turns instead of deadlocking and the
// events' ids follow the owners' commits; then each inserted row's lock. ON
// CONFLICT makes a create of an (owner, id) already there no error but a row
// to read back.
export const SQL = {
  /** Per create: its ordinality in the batch and whether it was inserted now (computed), else the stored name and tag. */
  createBatch: operation<
    [owners: string[], ids: string[], names: string[], tags: (string | null)[]],
    [n: number, created: boolean, name: Plant['name'] | null, tag: Plant['tag']]
  >(
    'plants_create_batch',
    `WITH input AS (
      SELECT * FROM unnest($1::text[], $2::int8[], $3::text[], $4::text[]) WITH ORDINALITY AS i(owner, id, name, tag, n)
    ), locked AS MATERIALIZED (${lockOwners('owner', 'input')}
    ), inserted AS (
      INSERT INTO plants (owner, id, name, tag)
      SELECT owner, id, name, tag FROM input CROSS JOIN locked ORDER BY n
      ON CONFLICT (owner, id) DO NOTHING
      RETURNING owner, id, name, tag
    ), logged AS (${logEvent('plant.created', 'inserted JOIN input i USING (owner, id)', 'i.owner', 'i.id', 'i.name', 'i.tag', 'ORDER BY i.n')}
    )
    SELECT i.n::int4, true, NULL::text, NULL::text FROM inserted JOIN input i USING (owner, id)
    UNION ALL
    SELECT i.n::int4, false, p.name, p.tag FROM input i
      CROSS JOIN LATERAL (SELECT name, tag FROM plants WHERE owner = i.owner AND id = i.id LIMIT 1) p`,
    { rowMode: 'array' },
  ),
};

// Each further attempt of a create needs another writer to have inserted and
// then deleted the same (owner, id) in between; two in a row are already
// unlikely. The bound keeps a pathological insert/delete storm (or a bug)
// from cycling forever: past it the client gets a 503 and retries later.
export const CREATE_ATTEMPTS = 5;

const MAX_BATCH = 256;
// One batch is one statement, and its events' ids have room for this many.
if (MAX_BATCH > MAX_EVENTS_PER_STATEMENT)
  throw new Error('a create batch would log more events than one statement can');
/**
 * Batches committing at once, at most. PostgreSQL flushes the WAL of
 * concurrent commits together, so a few batches in flight keep the disk busy
 * while the next ones form; many would only split the waiting creates into
 * smaller statements.
 */
const WRITE_BATCHES_IN_FLIGHT = 4;

export function raceError(): StoreUnavailableError {
  return new StoreUnavailableError(
    new Error(`create raced a concurrent insert and delete of the same id ${CREATE_ATTEMPTS} times in a row`),
  );
}

const hasNul = (s: string) => s.includes('\0');

/**
 * True when nothing in the values can make the statement fail, so one
 * create cannot fail the others of its batch. The HTTP layer already
 * guarantees this; other callers get their own statement and their own error.
 */
function batchable({ owner, plant }: PendingCreate): boolean {
  const { id, name, tag } = plant;
  return (
    typeof owner === 'string' &&
    !hasNul(owner) &&
    typeof id === 'bigint' &&
    id >= INT64_MIN &&
    id <= INT64_MAX &&
    typeof name === 'string' &&
    !hasNul(name) &&
    (tag === undefined || (typeof tag === 'string' && !hasNul(tag)))
  );
}

/** The create path: concurrent creates grouped into one multi-row statement, each answered on its own. */
export class InsertBatcher {
  readonly #batcher: Batcher<PendingCreate>;

  /** `single` creates one plant with its own statement: the path for a batch that failed, and for odd input. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly single: (owner: string, plant: NewPlantRecord) => Promise<CreateOutcome>,
  ) {
    this.#batcher = new Batcher((batch) => this.#run(batch), {
      maxItems: MAX_BATCH,
      maxInFlight: Math.min(WRITE_BATCHES_IN_FLIGHT, pool.options.max),
      key: (item) => item.owner,
    });
  }

  create(owner: string, plant: NewPlantRecord): Promise<CreateOutcome> {
    return new Promise((resolve, reject) => {
      const item: PendingCreate = { owner, plant, attempts: 0, resolve, reject };
      if (batchable(item)) this.#batcher.add(item);
      else this.single(owner, plant).then(resolve, reject);
    });
  }

  async #run(batch: PendingCreate[]): Promise<void> {
    // One statement cannot both insert an (owner, id) and see that row: a
    // repeat waits for the next batch, which sees the first one committed.
    const seen = new Set<string>();
    const unique: PendingCreate[] = [];
    const later: PendingCreate[] = [];
    for (const item of batch) {
      const key = `${item.owner}\0${item.plant.id}`;
      if (seen.has(key)) later.push(item);
      else {
        seen.add(key);
        unique.push(item);
      }
    }
    try {
      await this.#insert(unique);
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        for (const item of unique) item.reject(error);
      } else {
        // Not expected with batchable input, but a batch must not fail for
        // one bad row: every create gets its own statement and its own answer.
        // (A create answered before the failure keeps its answer: settling
        // twice does nothing, and its second statement is a replay.)
        await Promise.all(unique.map((item) => this.single(item.owner, item.plant).then(item.resolve, item.reject)));
      }
    }
    for (const item of later) this.#batcher.add(item);
  }

  async #insert(items: PendingCreate[]): Promise<void> {
    const owners: string[] = new Array(items.length);
    const ids: string[] = new Array(items.length);
    const names: string[] = new Array(items.length);
    const tags: (string | null)[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const { owner, plant } = items[i]!;
      owners[i] = owner;
      ids[i] = plant.id.toString();
      names[i] = plant.name;
      tags[i] = plant.tag ?? null;
    }
    const { rows } = await writeWithClient(this.pool, (client) =>
      run(client, SQL.createBatch, [owners, ids, names, tags]),
    );
    const outcomes: (CreateOutcome | undefined)[] = new Array(items.length);
    for (const [n, created, name, tag] of rows) {
      const i = n - 1;
      // A row can come back twice when the one it collided with was deleted
      // meanwhile and the insert went ahead: inserted is what happened.
      if (created) outcomes[i] = 'created';
      else if (outcomes[i] === undefined) {
        const { plant } = items[i]!;
        outcomes[i] = name === plant.name && tag === (plant.tag ?? null) ? 'replayed' : 'conflict';
      }
    }
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      const outcome = outcomes[i];
      if (outcome !== undefined) item.resolve(outcome);
      // Neither inserted nor seen: the row that blocked the insert was
      // committed after this statement's snapshot. A later statement sees it.
      else if (++item.attempts < CREATE_ATTEMPTS) this.#batcher.add(item);
      else item.reject(raceError());
    }
  }
}
