// The SQLite writer thread on a real file: writes queued together commit as
// one batch, each caller is answered only once its write is visible to other
// connections, a failing statement fails only its own request, and close()
// commits what is queued before the thread stops.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../../src/store/store.js';
import type { WriteOp } from '../../src/store/sqlite/write-kinds.js';
import { migrateSqlite } from '../../src/store/sqlite/store.sqlite.js';
import { fileIdentity } from '../../src/store/sqlite/store-file.js';
import { SqliteWriteError, WriterThread, type CommitListener } from '../../src/store/sqlite/writer-thread.js';

type CreateOp = Extract<WriteOp, { kind: 'create' }>;

/** The identity of a store file that never existed (the thread refuses to write anywhere else). */
const NO_FILE = { dev: 0, ino: 0 };

const create = (owner: string, id: number, name: string, tag: string | null = null): CreateOp => ({
  kind: 'create',
  owner,
  id: BigInt(id),
  name,
  tag,
});
const remove = (owner: string, id: number): WriteOp => ({ kind: 'delete', owner, id: BigInt(id) });
/** A create the database refuses: plants.name is NOT NULL. */
const refused = (owner: string, id: number): CreateOp => ({
  ...create(owner, id, ''),
  name: null as unknown as string,
});

describe('SQLite writer thread', () => {
  let dir: string;
  let path: string;
  let reader: Database.Database;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-writer-'));
    path = join(dir, 'plants.db');
    await migrateSqlite({ path, durability: 'full' });
    reader = new Database(path, { readonly: true });
  });
  after(() => {
    reader.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Counts the batches that changed plants, and keeps the owners each one reported. */
  function listener() {
    const batches: string[][] = [];
    const counted: CommitListener = {
      follow: () => {},
      committed: (owners) => void (owners.length > 0 && batches.push(owners.map((w) => w.owner))),
      probed: () => {},
    };
    return { counted, batches, commits: () => batches.length };
  }
  /** A writer thread on the suite's file that counts its commits; closed after the test. */
  function writer(t: { after(fn: () => Promise<void>): void }) {
    const { counted, batches, commits } = listener();
    const thread = new WriterThread({ path, durability: 'full', opened: fileIdentity(path) }, counted);
    t.after(() => thread.close());
    return { thread, batches, commits };
  }
  const names = (owner: string) =>
    reader.prepare('SELECT name FROM plants WHERE owner = ? ORDER BY seq').pluck().all(owner) as string[];

  it('commits writes queued together as one batch, and answers each once it is visible', async (t) => {
    const { thread, batches, commits } = writer(t);
    const seenOnAnswer: boolean[] = [];
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        thread.run(create('batch', i, `p${i}`)).then((result) => {
          seenOnAnswer[i] = names('batch').includes(`p${i}`);
          return result;
        }),
      ),
    );
    assert.deepEqual(new Set(results), new Set(['created']));
    assert.equal(results.length, 100);
    assert.equal(commits(), 1, 'one commit for the batch');
    assert.deepEqual(new Set(batches[0]), new Set(['batch']), 'reported with the owner it wrote');
    assert.ok(
      seenOnAnswer.every((seen) => seen),
      'every write was visible to another connection when it was answered',
    );
    assert.equal(names('batch').length, 100);
  });

  it('copies its commits back into the database file on a thread of its own, soon after them', async (t) => {
    const { thread } = writer(t);
    // In WAL mode only a checkpoint writes the database file itself.
    const fileSize = () => statSync(path).size;
    const before = fileSize();
    // New pages of plants, yet far fewer log pages than any connection's own checkpoint bound.
    const name = (i: number) => `plant-${i}-${'x'.repeat(100)}`;
    await Promise.all(Array.from({ length: 2000 }, (_, i) => thread.run(create('copied', i, name(i)))));
    const deadline = performance.now() + 5000;
    while (fileSize() === before && performance.now() < deadline) await sleep(20);
    assert.ok(fileSize() > before, `the database file stayed at ${before} bytes: nothing was checkpointed`);
  });

  it('answers each kind of write with its outcome', async (t) => {
    const { thread } = writer(t);
    assert.equal(await thread.run(create('kinds', 1, 'fern', 'green')), 'created');
    assert.equal(await thread.run(create('kinds', 1, 'fern', 'green')), 'replayed');
    assert.equal(await thread.run(create('kinds', 1, 'fern', null)), 'conflict');
    assert.equal(await thread.run(create('kinds-other-owner', 1, 'moss')), 'created');
    assert.equal(typeof (await thread.run(remove('kinds', 1))), 'bigint', 'the seq of the deleted plant');
    assert.equal(await thread.run(remove('kinds', 1)), undefined);
    assert.deepEqual(names('kinds'), []);
    assert.deepEqual(names('kinds-other-owner'), ['moss']);
  });

  it('fails only the request whose statement failed', async (t) => {
    const { thread, commits } = writer(t);
    const settled = await Promise.allSettled([
      thread.run(create('partial', 1, 'a')),
      thread.run(refused('partial', 2)),
      thread.run(create('partial', 3, 'c')),
    ]);
    assert.deepEqual(
      settled.map((s) => s.status),
      ['fulfilled', 'rejected', 'fulfilled'],
    );
    const error = (settled[1] as PromiseRejectedResult).reason as SqliteWriteError;
    assert.ok(error instanceof SqliteWriteError, String(error));
    assert.match(error.message, /NOT NULL/);
    assert.equal(error.code, 'SQLITE_CONSTRAINT_NOTNULL');
    assert.equal(commits(), 1);
    assert.deepEqual(names('partial'), ['a', 'c']);
    // The thread goes on serving.
    assert.equal(await thread.run(create('partial', 4, 'd')), 'created');
  });

  it('does not report a commit when every write of a batch failed', async (t) => {
    const { thread, commits } = writer(t);
    await assert.rejects(thread.run(refused('none', 1)), SqliteWriteError);
    assert.equal(commits(), 0);
    assert.deepEqual(names('none'), []);
  });

  it('close() commits the queued writes, then refuses new ones', async () => {
    const thread = new WriterThread({ path, durability: 'full', opened: fileIdentity(path) }, listener().counted);
    const writes = [1, 2, 3].map((i) => thread.run(create('closing', i, `c${i}`)));
    const closed = thread.close();
    await closed;
    assert.deepEqual(names('closing'), ['c1', 'c2', 'c3'], 'committed by the time close() resolves');
    assert.deepEqual(await Promise.all(writes), ['created', 'created', 'created']);
    await assert.rejects(thread.run(create('closing', 4, 'c4')), StoreUnavailableError);
    assert.equal(thread.close(), closed, 'closing again is the same close');
  });

  it('close() before any write starts no thread and resolves', async () => {
    const thread = new WriterThread(
      { path: join(dir, 'never', 'made.db'), durability: 'full', opened: NO_FILE },
      listener().counted,
    );
    await thread.close();
    await assert.rejects(thread.run(create('x', 1, 'x')), StoreUnavailableError);
  });

  it('fails the waiting writes as unavailable when the thread cannot open the database', async () => {
    const notADirectory = join(dir, 'file');
    writeFileSync(notADirectory, '');
    const thread = new WriterThread(
      { path: join(notADirectory, 'plants.db'), durability: 'full', opened: NO_FILE },
      listener().counted,
    );
    const settled = await Promise.allSettled([1, 2].map((i) => thread.run(create('broken', i, 'b'))));
    for (const s of settled) {
      assert.equal(s.status, 'rejected');
      assert.ok(s.reason instanceof StoreUnavailableError, String(s.reason));
    }
    await assert.rejects(thread.run(create('broken', 3, 'b')), StoreUnavailableError);
    await thread.close();
  });
});
