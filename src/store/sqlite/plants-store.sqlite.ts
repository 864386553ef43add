import { createCipheriv, createDecipheriv, createHash, type Cipher, type Decipher } from 'node:crypto';
import type Database from 'better-sqlite3';
import { dbQueryDuration, metricsOn } from '../../metrics/metrics.js';
import {
  InvalidCursorError,
  StoreUnavailableError,
  type ChangeVersion,
  type CreateOutcome,
  type NewPlantRecord,
  type PlantPage,
  type PlantRecord,
  type PlantStore,
} from '../store.js';
import type { ChangeEpoch } from './change-epoch.js';
import { INSERT_PLANT } from './plant-writes.sqlite.js';
import type { WriterThread } from './writer-thread.js';

/** A row of the plants table as list pages read it (raw mode: an array). */
type PageRow = [seq: bigint, name: string, tag: string | null];

const queryTime = dbQueryDuration.series('sqlite');

/**
 * A cursor is one AES block: the row position and 8 bytes derived from the
 * owner, encrypted with the store's key. It reveals nothing (not even the
 * global row number) and works only for the owner it was issued to.
 */
class CursorCodec {
  // ECB has no chaining, so one long-lived cipher (no padding, never
  // finalised) encrypts any number of single blocks; a new cipher per
  // cursor costs about as much as the whole list query.
  readonly #encrypt: Cipher;
  readonly #decrypt: Decipher;
  readonly #tags = new Map<string, Buffer>();

  constructor(key: Buffer) {
    this.#encrypt = createCipheriv('aes-128-ecb', key, null).setAutoPadding(false);
    this.#decrypt = createDecipheriv('aes-128-ecb', key, null).setAutoPadding(false);
  }

  #ownerTag(owner: string): Buffer {
    let tag = this.#tags.get(owner);
    if (tag === undefined) {
      tag = createHash('sha256').update(owner).digest().subarray(0, 8);
      if (this.#tags.size >= 10_000) this.#tags.clear();
      this.#tags.set(owner, tag);
    }
    return tag;
  }

  encode(owner: string, seq: bigint): string {
    const block = Buffer.allocUnsafe(16);
    block.writeBigInt64BE(seq, 0);
    this.#ownerTag(owner).copy(block, 8);
    return this.#encrypt.update(block).toString('base64url');
  }

  decode(owner: string, cursor: string): bigint {
    const sealed = Buffer.from(cursor, 'base64url');
    if (sealed.length !== 16 || sealed.toString('base64url') !== cursor) throw new InvalidCursorError();
    const block = this.#decrypt.update(sealed);
    const seq = block.readBigInt64BE(0);
    if (seq < 1n || !block.subarray(8).equals(this.#ownerTag(owner))) throw new InvalidCursorError();
    return seq;
  }
}

export class SqlitePlantStore implements PlantStore {
  readonly #insert: Database.Statement<[string, bigint, string, string | null]>;
  readonly #page: Database.Statement<[string, bigint, number]>;
  readonly #cursors: CursorCodec;

  /** Reads use `db`; writes go to the writer thread, which has a connection of its own. */
  constructor(
    private readonly db: Database.Database,
    private readonly writer: WriterThread,
    private readonly changes: ChangeEpoch,
  ) {
    this.#insert = db.prepare(INSERT_PLANT);
    this.#page = db
      .prepare('SELECT seq, name, tag FROM plants WHERE owner = ? AND seq > ? ORDER BY seq LIMIT ?')
      .raw(true)
      .safeIntegers(true);
    const key = db.prepare<[], { value: Buffer }>("SELECT value FROM secrets WHERE name = 'cursor_key'").get();
    this.#cursors = new CursorCodec(key!.value);
  }

  // A closed store (shutting down) is unavailable, like an unreachable database.
  #ensureOpen(): void {
    if (!this.db.open) throw new StoreUnavailableError(new Error('the SQLite store is closed'));
  }

  create(owner: string, plant: NewPlantRecord): Promise<CreateOutcome> {
    this.#ensureOpen();
    return this.writer.run({
      kind: 'create',
      owner,
      id: plant.id,
      name: plant.name,
      tag: plant.tag ?? null,
    });
  }

  async list(owner: string, limit: number, cursor?: string): Promise<PlantPage> {
    this.#ensureOpen();
    this.writer.poll();
    const after = cursor === undefined ? 0n : this.#cursors.decode(owner, cursor);
    const started = metricsOn ? performance.now() : 0;
    const rows = this.#page.all(owner, after, limit + 1) as PageRow[];
    if (metricsOn) queryTime.observe((performance.now() - started) / 1000);
    const more = rows.length > limit;
    const n = more ? limit : rows.length;
    const plants: PlantRecord[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const [, name, tag] = rows[i]!;
      plants[i] = tag === null ? { name } : { name, tag };
    }
    return more ? { plants, next: this.#cursors.encode(owner, rows[n - 1]![0]) } : { plants };
  }

  delete(owner: string, id: bigint): Promise<boolean> {
    this.#ensureOpen();
    return this.writer.run({ kind: 'delete', owner, id });
  }

  changeEpoch(owner: string): ChangeVersion | undefined {
    this.#ensureOpen();
    this.writer.poll();
    return this.changes.current(owner);
  }

  async insertMany(owner: string, plants: Iterable<NewPlantRecord>): Promise<number> {
    this.#ensureOpen();
    let n = 0;
    this.db.transaction(() => {
      for (const p of plants) n += this.#insert.run(owner, p.id, p.name, p.tag ?? null).changes;
    })();
    if (n > 0) this.changes.bump(owner);
    return n;
  }
}
