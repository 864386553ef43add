import type Database from 'better-sqlite3';
import { InvalidCursorError, StoreUnavailableError, type CreateOutcome, type NewPlantRecord, type PlantPage, type PlantRecord, type PlantStore } from '../store.js';
import { INT64_MAX } from '../../schemas/int64.js';
import type { ChangeEpoch } from './change-epoch.js';
import type { WriterThread } from './writer-thread.js';

/** A row of the plants table as list pages read it (raw mode: an array). */
type PageRow = [seq: bigint, name: string, tag: string | null];

const CURSOR = /^s(\d{1,19})$/;

function encodeCursor(seq: bigint): string {
  return Buffer.from(`s${seq}`).toString('base64url');
}

function decodeCursor(cursor: string): bigint {
  const m = CURSOR.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  const seq = m ? BigInt(m[1]!) : -1n;
  if (seq < 1n || seq > INT64_MAX || encodeCursor(seq) !== cursor) throw new InvalidCursorError();
  return seq;
}

export class SqlitePlantStore implements PlantStore {
  readonly #insert: Database.Statement<[string, bigint, string, string | null]>;
  readonly #page: Database.Statement<[string, bigint, number]>;

  /** Reads use `db`; writes go to the writer thread, which has a connection of its own. */
  constructor(
    private readonly db: Database.Database,
    private readonly writer: WriterThread,
    private readonly changes: ChangeEpoch,
  ) {
    this.#insert = db.prepare('INSERT INTO plants (owner, id, name, tag) VALUES (?, ?, ?, ?) ON CONFLICT (owner, id) DO NOTHING');
    this.#page = db
      .prepare('SELECT seq, name, tag FROM plants WHERE owner = ? AND seq > ? ORDER BY seq LIMIT ?')
      .raw(true)
      .safeIntegers(true);
  }

  // A closed store (shutting down) is unavailable, like an unreachable database.
  #ensureOpen(): void {
    if (!this.db.open) throw new StoreUnavailableError(new Error('the SQLite store is closed'));
  }

  create(owner: string, plant: NewPlantRecord): Promise<CreateOutcome> {
    this.#ensureOpen();
    return this.writer.run({ kind: 'create', owner, id: plant.id, name: plant.name, tag: plant.tag ?? null }) as Promise<CreateOutcome>;
  }

  async list(owner: string, limit: number, cursor?: string): Promise<PlantPage> {
    this.#ensureOpen();
    const after = cursor === undefined ? 0n : decodeCursor(cursor);
    const rows = this.#page.all(owner, after, limit + 1) as PageRow[];
    const more = rows.length > limit;
    const n = more ? limit : rows.length;
    const plants: PlantRecord[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const [, name, tag] = rows[i]!;
      plants[i] = tag === null ? { name } : { name, tag };
    }
    return more ? { plants, next: encodeCursor(rows[n - 1]![0]) } : { plants };
  }

  delete(owner: string, id: bigint): Promise<boolean> {
    this.#ensureOpen();
    return this.writer.run({ kind: 'delete', owner, id }) as Promise<boolean>;
  }

  changeEpoch(): number {
    this.#ensureOpen();
    return this.changes.current();
  }

  /** Bulk load for benchmarks and imports: one transaction, no HTTP. */
  insertMany(owner: string, plants: Iterable<NewPlantRecord>): number {
    let n = 0;
    this.db.transaction(() => {
      for (const p of plants) n += this.#insert.run(owner, p.id, p.name, p.tag ?? null).changes;
    })();
    return n;
  }
}
