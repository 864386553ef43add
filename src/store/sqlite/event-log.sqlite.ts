import type Database from 'better-sqlite3';
import type { EventLog, PlantEvent } from '../store.js';
import { operation } from '../operation.js';
import { toPlantEvent, type ColumnTuple } from '../rows.js';
import { prepareAll, type Prepared } from './db-connect.sqlite.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';
import type { WriterThread } from './writer-thread.js';
import { boundLimit } from './bound-limit.js';

const EVENT_COLUMNS = ['id', 'owner', 'type', 'plant_id', 'name', 'tag', 'occurred_at'] as const;
type Event = SafeIntegers<SqliteRow<'plant_events'>>;
type EventRow = ColumnTuple<Event, typeof EVENT_COLUMNS>;
const COLUMNS = EVENT_COLUMNS.join(', ');

// The event log's reads; pruning is a write of the writer thread
// ('events-prune', event-prune.sqlite.ts). Locks: none, each read is one
// statement on the main thread's connection with a WAL snapshot of its own.
// There is one writer, so ids are given out in commit order and every
// committed event is final: a read never misses an event below one it saw.
const SQL = {
  after: operation<[after: bigint, limit: number], EventRow>(
    'plant_events_after',
    `SELECT ${COLUMNS} FROM plant_events WHERE id > ? ORDER BY id ${boundLimit('?')}`,
    { rowMode: 'array', bigints: true },
  ),
  ownerAfter: operation<[owner: string, after: bigint, upTo: bigint, limit: number], EventRow>(
    'plant_events_owner_after',
    `SELECT ${COLUMNS} FROM plant_events WHERE owner = ? AND id > ? AND id <= ? ORDER BY id ${boundLimit('?')}`,
    { rowMode: 'array', bigints: true },
  ),
  /**
   * One statement, one snapshot: the mark and the newest id agree. Never
   * below 0: the events below it (the upgrade to one event log) are for
   * webhook delivery only.
   */
  bounds: operation<[owner: string], [pruned: bigint, newest: bigint]>(
    'plant_events_bounds',
    `SELECT max((SELECT up_to FROM plant_events_pruned),
        coalesce((SELECT up_to FROM plant_events_owner_pruned WHERE owner = ?), 0)),
      (SELECT max(coalesce(max(id), 0), 0) FROM plant_events)`,
    { rowMode: 'array', bigints: true },
  ),
};

export class SqliteEventLog implements EventLog {
  readonly #sql: Prepared<typeof SQL>;

  constructor(
    db: Database.Database,
    private readonly writer: WriterThread,
  ) {
    this.#sql = prepareAll(db, SQL);
  }

  async after(after: bigint, limit: number): Promise<PlantEvent[]> {
    return this.#sql.after.all(after, limit).map(toPlantEvent);
  }

  async ownerAfter(owner: string, after: bigint, upTo: bigint, limit: number): Promise<PlantEvent[]> {
    return this.#sql.ownerAfter.all(owner, after, upTo, limit).map(toPlantEvent);
  }

  async bounds(owner?: string): Promise<{ pruned: bigint; newest: bigint }> {
    // No owner is named '' (OWNER_SHAPE), so '' reads the mark of pruning by age alone.
    const [pruned, newest] = this.#sql.bounds.get(owner ?? '')!;
    return { pruned, newest };
  }

  prune(before: number, keep: number): Promise<{ removed: number; more: boolean }> {
    return this.writer.run({ kind: 'events-prune', before, keep });
  }
}
