// The SQLite store's files hold token hashes, the cursor key and every plant:
// the database, its WAL and shared-memory files, and backups are created
// 0600 whatever the umask, and the folders created for them 0700; so are the
// signal folder of live events and what it holds.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/open-store.js';
import { signalFolder } from '../../src/store/sqlite/event-signal.sqlite.js';

const LIMIT = { timeout: 30_000 };
const mode = (path: string) => statSync(path).mode & 0o777;

describe('SQLite file modes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-modes-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  // The umask most systems start with: without care, files come out 0644.
  const umask = process.umask(0o022);
  after(() => process.umask(umask));

  it('creates the store folder 0700 and the database, WAL and SHM 0600', LIMIT, async () => {
    const db = join(dir, 'data', 'nested', 'plants.db');
    const store = await openStore(loadConfig({ db }, {}));
    try {
      await store.plants.create('alice', { id: 1n, name: 'fern' });
      assert.equal(mode(join(dir, 'data')).toString(8), '700');
      assert.equal(mode(join(dir, 'data', 'nested')).toString(8), '700');
      for (const file of [db, `${db}-wal`, `${db}-shm`]) assert.equal(mode(file).toString(8), '600', file);
    } finally {
      await store.close();
    }
  });

  it('creates the signal folder of live events 0700 and the files in it 0600', LIMIT, async () => {
    const db = join(dir, 'signal.db');
    const store = await openStore(loadConfig({ db }, {}));
    try {
      const signal = store.eventSignal!;
      signal.start();
      const deaf = signal.listen(() => {});
      const folder = signalFolder(db);
      assert.equal(mode(folder).toString(8), '700');
      const [own] = readdirSync(folder);
      assert.equal(mode(join(folder, own!)).toString(8), '700');
      for (const file of readdirSync(join(folder, own!)))
        assert.equal(mode(join(folder, own!, file)).toString(8), '600', file);
      deaf();
    } finally {
      await store.close();
    }
  });

  it('narrows a store file an older version left readable by others', LIMIT, async () => {
    const db = join(dir, 'old.db');
    writeFileSync(db, '');
    chmodSync(db, 0o644);
    const store = await openStore(loadConfig({ db }, {}));
    await store.close();
    assert.equal(mode(db).toString(8), '600');
  });

  it('writes backups 0600, and restores them 0600', LIMIT, async () => {
    const db = join(dir, 'backed.db');
    assert.equal((await runCli(['migrate', '--db', db])).code, 0);
    const out = join(dir, 'backup.db');
    const b = await runCli(['backup', '--db', db, '--out', out]);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(mode(out).toString(8), '600');
    chmodSync(out, 0o644);
    const target = join(dir, 'restored', 'plants.db');
    const r = await runCli(['restore', '--db', target, '--from', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(mode(target).toString(8), '600');
    assert.equal(mode(join(dir, 'restored')).toString(8), '700');
  });
});
