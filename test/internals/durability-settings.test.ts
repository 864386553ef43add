// --durability reaches the database: SQLite's synchronous pragma and
// PostgreSQL's synchronous_commit for the server's connections. And SQLite
// connections leave more than SQLite's default 1000 pages in the log.
import assert from 'node:assert/strict';
import { it } from '../helpers/requirements.js';
import { openSqlite, WAL_CHECKPOINT_PAGES } from '../../src/store/sqlite/db-connect.sqlite.js';
import { createPgPool } from '../../src/store/postgres/db-connect.postgres.js';
import { storeConfig } from '../../src/config.js';
import { describeOnStore } from '../helpers/stores.js';

describeOnStore('sqlite', 'durability settings', (fx) => {
  it('full fsyncs every commit (synchronous=FULL), normal only at checkpoints (NORMAL)', () => {
    for (const [durability, expected] of [
      ['full', 2],
      ['normal', 1],
    ] as const) {
      const db = openSqlite({ path: fx.db, durability });
      try {
        assert.equal(db.pragma('synchronous', { simple: true }), expected, durability);
        assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
      } finally {
        db.close();
      }
    }
  });

  it(`copies the log back into the database after ${WAL_CHECKPOINT_PAGES} pages, not after 1000`, () => {
    const db = openSqlite({ path: fx.db, durability: 'normal' });
    try {
      db.exec('CREATE TABLE wal_fill (v BLOB)');
      // A row of 3000 bytes fills a page: each commit writes a new leaf, the
      // root and page 1, so 600 commits leave about 1800 pages in the log.
      const insert = db.prepare('INSERT INTO wal_fill (v) VALUES (randomblob(3000))');
      for (let i = 0; i < 600; i++) insert.run();
      const [{ log }] = db.pragma('wal_checkpoint(PASSIVE)') as [{ log: number }];
      assert.ok(log > 1000 && log <= WAL_CHECKPOINT_PAGES, `${log} pages in the log`);
    } finally {
      db.close();
    }
  });
});

describeOnStore('postgres', 'durability settings', (fx) => {
  it('full keeps synchronous_commit on, normal turns it off', async () => {
    for (const [durability, expected] of [
      ['full', 'on'],
      ['normal', 'off'],
    ] as const) {
      const config = storeConfig({ ...fx.config(), durability });
      assert.equal(config.kind, 'postgres');
      const pool = createPgPool(config.postgres);
      try {
        const { rows } = await pool.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
        assert.equal(rows[0]!.synchronous_commit, expected, durability);
      } finally {
        await pool.end();
      }
    }
  });
});
