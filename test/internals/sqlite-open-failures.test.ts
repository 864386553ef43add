// Opening the SQLite store when the file cannot be used: the connection that
// was opened is closed again, so a failed start or migration leaves no file
// handle behind in a process that goes on running (an in-process CLI, a test).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openSqlite } from '../../src/store/sqlite/db-connect.sqlite.js';
import { StoreFileMissingError } from '../../src/store/sqlite/store-file.js';
import { migrateSqlite } from '../../src/store/sqlite/store.sqlite.js';
import { openHandles } from '../helpers/open-handles.js';

describe('opening a SQLite file that cannot be used', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-open-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('a file that is no SQLite database: the error, and no handle left open', async () => {
    const path = join(dir, 'notes.txt');
    writeFileSync(path, 'not a database\n'.repeat(100));
    const named = { message: `cannot use ${path} as the SQLite database: file is not a database` };
    assert.throws(() => openSqlite({ path, durability: 'normal' }), named);
    await assert.rejects(migrateSqlite({ path, durability: 'normal' }), named);
    assert.equal(openHandles(path), 0, 'the failed open left the file open');
  });

  it('a missing file that must exist: a StoreFileMissingError', () => {
    const path = join(dir, 'missing.db');
    assert.throws(() => openSqlite({ path, durability: 'normal', mustExist: true }), StoreFileMissingError);
  });
});
