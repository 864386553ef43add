import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { openSqlite } from '../src/store/sqlite/db-connect.sqlite.js';
import { GroupCommit } from '../src/store/sqlite/group-commit.js';

describe('SQLite group commit', () => {
  let dir: string;
  let db: Database.Database;
  let reader: Database.Database;
  let writes: GroupCommit;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-gc-'));
    db = openSqlite({ path: join(dir, 'gc.db'), durability: 'full' });
    db.exec('CREATE TABLE t (x INTEGER NOT NULL UNIQUE)');
    reader = new Database(join(dir, 'gc.db'), { readonly: true });
    writes = new GroupCommit(db);
  });
  after(() => {
    reader.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const insert = (x: number | null) => () => db.prepare('INSERT INTO t (x) VALUES (?)').run(x).changes;
  const rows = () => reader.prepare('SELECT x FROM t ORDER BY x').all().map((r) => (r as { x: number }).x);

  it('runs writes queued together in one transaction and answers after it commits', async () => {
    let sawOwnTransaction = 0;
    const inTx = () => {
      if (db.inTransaction) sawOwnTransaction++;
    };
    const done = await Promise.all([1, 2, 3].map((x) => writes.run(() => (inTx(), insert(x)()))));
    assert.deepEqual(done, [1, 1, 1]);
    assert.equal(sawOwnTransaction, 3);
    // Answered only once committed: another connection already sees them.
    assert.deepEqual(rows(), [1, 2, 3]);
  });

  it('fails only the statement that failed', async () => {
    const results = await Promise.allSettled([
      writes.run(insert(10)),
      writes.run(insert(null)),
      writes.run(insert(1)),
      writes.run(() => {
        throw new Error('boom');
      }),
      writes.run(insert(11)),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'rejected', 'rejected', 'rejected', 'fulfilled'],
    );
    assert.match(String((results[1] as PromiseRejectedResult).reason), /NOT NULL/);
    assert.match(String((results[2] as PromiseRejectedResult).reason), /UNIQUE/);
    assert.deepEqual(rows(), [1, 2, 3, 10, 11]);
  });

  it('commitNow runs a batch at once and reports each outcome in order', () => {
    const outcomes = writes.commitNow([insert(30), insert(null), insert(31)]);
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [true, false, true],
    );
    assert.deepEqual(rows().slice(-2), [30, 31]);
  });

  it('drain waits for queued writes', async () => {
    const pending = writes.run(insert(20));
    await writes.drain();
    assert.ok(rows().includes(20));
    await pending;
  });
});
