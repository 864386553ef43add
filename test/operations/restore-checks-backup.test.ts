// plant-store restore takes only what plant-store backup wrote: the backup's
// checksum must match, and its schema must be exactly the one this version's
// migrations make (no table, index, trigger or view of its own).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';

const LIMIT = { timeout: 60_000 };

describe('plant-store restore checks', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-restore-checks-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const source = join(dir, 'source.db');
  let n = 0;

  /** A fresh backup of the source store; returns its path. */
  async function backup(): Promise<string> {
    const out = join(dir, `backup-${++n}.db`);
    const r = await runCli(['backup', '--db', source, '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    return out;
  }
  const restore = (from: string, ...flags: string[]) =>
    runCli(['restore', '--db', join(dir, `target-${++n}.db`), '--from', from, ...flags]);
  /** Changes the backup with SQL and writes a checksum that matches again, as someone with both files could. */
  function tamper(path: string, sql: string): void {
    const db = new Database(path);
    db.exec(sql);
    db.close();
    const sum = createHash('sha256').update(readFileSync(path)).digest('hex');
    writeFileSync(`${path}.sha256`, `${sum}  ${basename(path)}\n`);
  }

  it('backup writes a checksum next to the backup, in sha256sum format', LIMIT, async () => {
    assert.equal((await runCli(['migrate', '--db', source])).code, 0);
    const out = await backup();
    const sum = createHash('sha256').update(readFileSync(out)).digest('hex');
    assert.equal(readFileSync(`${out}.sha256`, 'utf8'), `${sum}  ${basename(out)}\n`);
    const r = await restore(out);
    assert.equal(r.code, 0, r.stderr);
  });

  it('refuses a backup that changed after it was written', LIMIT, async () => {
    const out = await backup();
    const db = new Database(out);
    db.prepare("INSERT INTO plants (owner, id, name) VALUES ('mallory', 1, 'planted')").run();
    db.close();
    const r = await restore(out);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /does not match its checksum .*\.sha256: it changed after the backup/);
  });

  it('refuses a backup without its checksum unless --without-checksum', LIMIT, async () => {
    const out = await backup();
    rmSync(`${out}.sha256`);
    const r = await restore(out);
    // Another command line fixes it: a usage error, like a missing --force.
    assert.equal(r.code, 2);
    assert.match(r.stderr, /\.sha256 is missing: .*add --without-checksum/);
    const again = await restore(out, '--without-checksum');
    assert.equal(again.code, 0, again.stderr);
  });

  const extras: [string, string, RegExp][] = [
    [
      'a trigger',
      `CREATE TRIGGER plant_token AFTER INSERT ON plants BEGIN
         INSERT INTO tokens (id, hash, owner, scopes, created_at) VALUES ('tok_evil', randomblob(32), 'mallory', 'plants:read', 0);
       END`,
      /trigger plant_token is not part of the Plant Store schema/,
    ],
    [
      'a view',
      'CREATE VIEW everything AS SELECT * FROM tokens',
      /view everything is not part of the Plant Store schema/,
    ],
    ['a table', 'CREATE TABLE notes (x TEXT)', /table notes is not part of the Plant Store schema/],
    [
      'an index',
      'CREATE INDEX plants_name ON plants (name)',
      /index plants_name is not part of the Plant Store schema/,
    ],
    ['a dropped index', 'DROP INDEX plants_owner_seq', /index plants_owner_seq is missing/],
  ];
  for (const [what, sql, message] of extras) {
    it(`refuses a backup with ${what} of its own, even with a matching checksum`, LIMIT, async () => {
      const out = await backup();
      tamper(out, sql);
      const r = await restore(out);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /does not have the Plant Store schema, so it is not restored/);
      assert.match(r.stderr, message);
    });
  }

  it('refuses a table whose definition was changed', LIMIT, async () => {
    const out = await backup();
    tamper(out, 'ALTER TABLE tokens ADD COLUMN note TEXT');
    const r = await restore(out);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /table tokens differs from the Plant Store schema/);
  });
});
