// A migration that cannot take SQLite's write lock: another connection holds
// it past busy_timeout (10 s, hence slow), BEGIN IMMEDIATE fails with "database
// is locked", and the connection the migration opened is closed again.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { after, before, describe, it } from '../helpers/requirements.js';
import { openHandles } from '../helpers/open-handles.js';
import { migrateSqlite } from '../../src/store/sqlite/store.sqlite.js';

describe('migrateSqlite while another connection writes', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-migrate-busy-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('fails with "database is locked" and leaves no handle open', { timeout: 30_000 }, async () => {
    const path = join(dir, 'plants.db');
    await migrateSqlite({ path, durability: 'normal' });
    const holder = new Database(path);
    try {
      holder.exec('BEGIN IMMEDIATE');
      await assert.rejects(migrateSqlite({ path, durability: 'normal' }), /database is locked/);
    } finally {
      holder.close();
    }
    // Counted once the holder is closed: while it holds locks on the file,
    // SQLite keeps the descriptors of other connections to it open (closing
    // one would drop this process's locks), even after they were closed.
    assert.equal(openHandles(path), 0, 'the failed migration left the database open');
  });
});
