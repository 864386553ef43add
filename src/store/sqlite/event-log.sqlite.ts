import type Database from 'better-sqlite3';
import type { EventLog, PlantEvent } from '../store.js';
import type { ColumnTuple } from '../rows.js';
import type { SafeIntegers, SqliteRow } from './tables.sqlite.js';
import type { WriterThread } from './writer-thread.js';
import { boundLimit } from './bound-limit.js';

const EVENT_COLUMNS = ['id', 'owner', 'type', 'plant_id', 'name', 'tag', 'occurred_at'] as const;
type EventRow = ColumnTuple<SafeIntegers<SqliteRow<'plant_events'>>, typeof EVENT_COLUMNS>;
const COLUMNS = EVENT_COLUMNS.join(', ');

const toEvent = ([id, owner, type, plantId, name, tag, occurredAt]: EventRow): PlantEvent => ({
  id,
  owner,
  type,
  plantId,
  name,
  tag,
  occurredAt: Number(occurredAt),
});

/**
 * Reads on the main thread's connection (each an indexed range read); pruning
 * goes to the writer thread like every other write. There is one writer, so
 * ids are given out in commit order and every committed event is final.
 */
export class SqliteEventLog implements EventLog {
  readonly #after: Database.Statement<[bigint, number]>;
  readonly #ownerAfter: Database.Statement<[string, bigint, bigint, number]>;
  readonly #bounds: Database.Statement<[string]>;

  constructor(
    db: Database.Database,
    private readonly writer: WriterThread,
  ) {
    const rows = (sql: string) => db.prepare(sql).raw(true).safeIntegers(true);
    this.#after = rows(`SELECT ${COLUMNS} FROM plant_events WHERE id > ? ORDER BY id ${boundLimit('?')}`);
    this.#ownerAfter = rows(
      `SELECT ${COLUMNS} FROM plant_events WHERE owner = ? AND id > ? AND id <= ? ORDER BY id ${boundLimit('?')}`,
    );
    // One statement, one snapshot: the mark and the newest id agree. Never
    // below 0: the events below it (the upgrade to one event log) are for
    // webhook delivery only.
    this.#bounds = db
      .prepare(
        `SELECT max((SELECT up_to FROM plant_events_pruned),
            coalesce((SELECT up_to FROM plant_events_owner_pruned WHERE owner = ?), 0)),
          (SELECT max(coalesce(max(id), 0), 0) FROM plant_events)`,
      )
      .raw(true)
      .safeIntegers(true);
  }

  async after(after: bigint, limit: number): Promise<PlantEvent[]> {
    return (this.#after.all(after, limit) as EventRow[]).map(toEvent);
  }

  async ownerAfter(owner: string, after: bigint, upTo: bigint, limit: number): Promise<PlantEvent[]> {
    return (this.#ownerAfter.all(owner, after, upTo, limit) as EventRow[]).map(toEvent);
  }

  async bounds(owner?: string): Promise<{ pruned: bigint; newest: bigint }> {
    // No owner is named '' (OWNER_SHAPE), so '' reads the mark of pruning by age alone.
    const [pruned, newest] = this.#bounds.get(owner ?? '') as [bigint, bigint];
    return { pruned, newest };
  }

  prune(before: number, keep: number): Promise<{ removed: number; more: boolean }> {
    return this.writer.run({ kind: 'events-prune', before, keep });
  }
}
