// The change epoch on a real SQLite file: it moves on every commit made
// through this connection (bump) and on every commit by another connection
// (PRAGMA data_version), seen from the next turn of the event loop.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type Database from 'better-sqlite3';
import { ChangeEpoch } from '../../src/store/sqlite/change-epoch.js';
import { openSqlite } from '../../src/store/sqlite/db-connect.sqlite.js';

describe('SQLite change epoch', () => {
  let dir: string;
  let own: Database.Database;
  let other: Database.Database;
  let epoch: ChangeEpoch;
  let n = 0;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-epoch-'));
    own = openSqlite({ path: join(dir, 'epoch.db'), durability: 'normal' });
    own.exec('CREATE TABLE t (x INTEGER)');
    other = openSqlite({ path: join(dir, 'epoch.db'), durability: 'normal' });
    epoch = new ChangeEpoch(own);
  });
  after(() => {
    other.close();
    own.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const write = (db: Database.Database) => db.prepare('INSERT INTO t (x) VALUES (?)').run(++n);

  it('stays the same while nothing is written', async () => {
    const start = epoch.current();
    assert.equal(epoch.current(), start);
    await nextTurn();
    assert.equal(epoch.current(), start);
    own.prepare('SELECT count(*) FROM t').get();
    other.prepare('SELECT count(*) FROM t').get();
    await nextTurn();
    assert.equal(epoch.current(), start);
  });

  it("moves at once on bump(), which counts this connection's own commits", async () => {
    const start = epoch.current();
    // data_version does not change for commits made through the same
    // connection, which is why the writer bumps the epoch itself.
    write(own);
    await nextTurn();
    assert.equal(epoch.current(), start);
    epoch.bump();
    assert.notEqual(epoch.current(), start);
  });

  it('moves on the next turn of the event loop after another connection commits', async () => {
    const start = epoch.current();
    write(other);
    // data_version is read at most once per turn: this turn still has the old value.
    assert.equal(epoch.current(), start);
    await nextTurn();
    const after = epoch.current();
    assert.notEqual(after, start);
    await nextTurn();
    assert.equal(epoch.current(), after, 'moves once per change');
  });

  it('moves once per commit by another connection, not for a rollback', async () => {
    let last = epoch.current();
    for (let i = 0; i < 5; i++) {
      other.transaction(() => write(other))();
      await nextTurn();
      const now = epoch.current();
      assert.notEqual(now, last, `commit ${i + 1}`);
      last = now;
    }
    other.exec('BEGIN IMMEDIATE');
    write(other);
    other.exec('ROLLBACK');
    await nextTurn();
    assert.equal(epoch.current(), last, 'a rolled-back transaction changes nothing');
  });
});
