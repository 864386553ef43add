import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import Database from 'better-sqlite3';
import { openSqlite } from '../../src/store/sqlite/db-connect.sqlite.js';
import { GroupCommit } from '../../src/store/sqlite/group-commit.js';

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
  const rows = () =>
    reader
      .prepare('SELECT x FROM t ORDER BY x')
      .all()
      .map((r) => (r as { x: number }).x);

  it('runs a batch in one transaction and returns once it has committed', () => {
    let inTransaction = 0;
    const outcomes = writes.commitNow([1, 2, 3].map((x) => () => (db.inTransaction && inTransaction++, insert(x)())));
    assert.deepEqual(
      outcomes,
      [1, 2, 3].map(() => ({ ok: true, value: 1 })),
    );
    assert.equal(inTransaction, 3);
    assert.equal(db.inTransaction, false);
    // Another connection already sees them.
    assert.deepEqual(rows(), [1, 2, 3]);
  });

  it('fails only the statement that failed', () => {
    const outcomes = writes.commitNow([
      insert(10),
      insert(null),
      insert(1),
      () => {
        throw new Error('boom');
      },
      insert(11),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [true, false, false, false, true],
    );
    assert.match(String((outcomes[1] as { error: unknown }).error), /NOT NULL/);
    assert.match(String((outcomes[2] as { error: unknown }).error), /UNIQUE/);
    assert.deepEqual(rows(), [1, 2, 3, 10, 11]);
  });

  it('reruns the rest of the batch when a write ends the whole transaction', () => {
    const outcomes = writes.commitNow([
      insert(20),
      insert(null),
      () => {
        // What SQLite does itself on a full disk or an I/O error: the statement
        // fails and the whole transaction is rolled back.
        db.exec('ROLLBACK');
        throw new Error('disk I/O error');
      },
      insert(21),
    ]);
    assert.deepEqual(
      outcomes.map((o) => o.ok),
      [true, false, false, true],
    );
    assert.deepEqual(rows().slice(-2), [20, 21]);
  });
});
