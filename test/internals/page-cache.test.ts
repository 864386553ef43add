// SQLite list page reuse: a page is reused only while its owner's plants did
// not change since it was read (appends aside for a page with a next page,
// and deletions outside it), the cache stays within its entry and byte bounds
// (least recently used first out), a walk through the list by cursor does not
// fill it, and the store's pages come from its file or, while nothing
// changed, from memory (the same page object again).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Database from 'better-sqlite3';
import { ChangeEpoch } from '../../src/store/sqlite/change-epoch.js';
import { openSqlite } from '../../src/store/sqlite/db-connect.sqlite.js';
import { PageCache, type PageEntry } from '../../src/store/sqlite/page-cache.js';
import { SqlitePlantStore } from '../../src/store/sqlite/plants-store.sqlite.js';
import { migrateSqlite, openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.sqlite.js';
import { fileIdentity } from '../../src/store/sqlite/store-file.js';
import { WriterThread } from '../../src/store/sqlite/writer-thread.js';
import type { JsonPage } from '../../src/store/store.js';

/** A page read at `epoch`; with `next`, one that had a next page. Its span is the whole list unless given. */
const page = (epoch: number, body: string, next?: string, span = { from: 0n, to: 1000n }): PageEntry => ({
  read: epoch,
  page: next === undefined ? { body, etag: '"t"' } : { body, next, etag: '"t"' },
  span,
});
/** The version under which page(epoch, …) was read. */
const v = (changed: number, appended = changed) => ({ changed, appended, deletions: [] });

describe('list page cache', () => {
  it('returns a page only while nothing changed since it was read', () => {
    const cache = new PageCache(1024);
    const entry = page(7, '[{"name":"a"}]', 'x');
    cache.set('alice\n1\n', entry);
    assert.equal(cache.get('alice\n1\n', v(7)), entry.page);
    assert.equal(cache.get('alice\n1\n', v(8)), undefined);
    assert.equal(cache.get('alice\n2\n', v(7)), undefined);
  });

  it('keeps a page across later deletions outside its span only', () => {
    const cache = new PageCache(1024);
    const entry = page(5, '[{"name":"a"}]', 'next', { from: 10n, to: 20n });
    cache.set('k', entry);
    const deleted = (...positions: bigint[]) => ({
      ...v(3, 9),
      deletions: positions.map((position, i) => ({ at: 6 + i, position })),
    });
    assert.equal(cache.get('k', deleted(10n, 21n, 500n)), entry.page, 'before it and after it');
    assert.equal(cache.get('k', deleted(21n, 11n)), undefined, 'within it');
    assert.equal(cache.get('k', deleted(20n)), undefined, 'its last plant');
    const earlier = { ...v(3, 9), deletions: [{ at: 4, position: 15n }] };
    assert.equal(cache.get('k', earlier), entry.page, 'a deletion before the page was read is in it');
  });

  it('keeps a page with a next page across appends, and only the last page goes with them', () => {
    const cache = new PageCache(1024);
    const full = page(3, '[{"name":"a"}]', 'x');
    const last = page(3, '[{"name":"z"}]');
    cache.set('first', full);
    cache.set('last', last);
    assert.equal(cache.get('first', v(3, 9)), full.page, 'plants appended after it: the page is the same');
    assert.equal(cache.get('last', v(3, 9)), undefined, 'the last page may have grown');
    assert.equal(cache.get('last', v(3)), last.page);
    assert.equal(cache.get('first', v(4, 9)), undefined, 'anything else that changed');
  });

  it('replaces the page stored under the same key', () => {
    const cache = new PageCache(10);
    cache.set('k', page(1, '123456'));
    cache.set('k', page(2, 'abcdef'));
    // Counted once: 6 bytes, not 12, so it is still there.
    assert.equal(cache.get('k', v(2))?.body, 'abcdef');
    assert.equal(cache.get('k', v(3)), undefined);
  });

  it('stays within maxBytes, dropping the least recently used pages first', () => {
    const cache = new PageCache(10);
    cache.set('a', page(1, 'aaaa'));
    cache.set('b', page(1, 'bbbb'));
    cache.set('c', page(1, 'cccc'));
    assert.equal(cache.get('a', v(1)), undefined);
    assert.equal(cache.get('b', v(1))?.body, 'bbbb');
    assert.equal(cache.get('c', v(1))?.body, 'cccc');
  });

  it('stays within maxEntries, dropping the least recently used pages first', () => {
    const cache = new PageCache(1024, 2);
    for (const key of ['a', 'b', 'c']) cache.set(key, page(1, key));
    assert.deepEqual(
      ['a', 'b', 'c'].map((key) => cache.get(key, v(1))?.body),
      [undefined, 'b', 'c'],
    );
  });

  it('does not keep a page larger than maxBytes', () => {
    const cache = new PageCache(10);
    cache.set('big', page(1, 'x'.repeat(11)));
    assert.equal(cache.get('big', v(1)), undefined);
    cache.set('small', page(1, 'y'.repeat(10)));
    assert.equal(cache.get('small', v(1))?.body, 'y'.repeat(10));
  });
});

describe('list pages on SQLite', () => {
  let dir: string;
  let db: Database.Database;
  let epoch: ChangeEpoch;
  let writer: WriterThread;
  /** The store as SqliteStore makes it, with 1 MiB for pages, and one on the same connection keeping none. */
  let store: SqlitePlantStore;
  let off: SqlitePlantStore;
  let other: SqliteStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-list-pages-'));
    const path = join(dir, 'plants.db');
    await migrateSqlite({ path, durability: 'normal' });
    db = openSqlite({ path, durability: 'normal' });
    epoch = new ChangeEpoch(db);
    writer = new WriterThread({ path, durability: 'normal', opened: fileIdentity(path) }, epoch);
    store = new SqlitePlantStore(db, writer, epoch, 1 << 20);
    off = new SqlitePlantStore(db, writer, epoch, 0);
    // A second connection to the same file, as another worker or process has.
    other = await openSqliteStore({ path, durability: 'normal', migrate: false });
  });
  after(async () => {
    await other.close();
    await writer.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const turn = () => new Promise((resolve) => setImmediate(resolve));
  const list = (owner: string, limit: number, cursor?: string): Promise<JsonPage> =>
    Promise.resolve(store.page(owner, limit, cursor));

  /** Turns until the store can tell the owner's version again (it asks its writer thread after a write). */
  async function known(owner: string): Promise<void> {
    for (writer.poll(); epoch.current(owner) === undefined; writer.poll()) await turn();
  }

  it('reads a page with its cursor, then reuses it while nothing changes', async () => {
    await store.create('reuse', { id: 1n, name: 'a' });
    await store.create('reuse', { id: 2n, name: 'b', tag: 't' });
    await known('reuse');
    const first = await list('reuse', 1);
    assert.equal(first.body, '[{"name":"a"}]');
    assert.match(first.next!, /^[A-Za-z0-9_-]+$/);
    const last = await list('reuse', 1, first.next);
    assert.deepEqual([last.body, last.next], ['[{"name":"b","tag":"t"}]', undefined]);
    await turn();
    assert.equal(await list('reuse', 1), first, 'answered from memory: the page read before');
    assert.equal(store.page('reuse', 1), first, 'without a promise');
    // Another limit: another page, kept under a key of its own.
    const two = await list('reuse', 2);
    assert.equal(two.body, '[{"name":"a"},{"name":"b","tag":"t"}]');
    assert.equal(await list('reuse', 2), two);
    assert.equal(await list('reuse', 1), first);
  });

  it('reads again after a write through this store or another connection', async () => {
    assert.equal((await list('fresh', 10)).body, '[]');
    await store.create('fresh', { id: 1n, name: 'own' });
    assert.equal((await list('fresh', 10)).body, '[{"name":"own"}]');
    await other.plants.create('fresh', { id: 2n, name: 'theirs' });
    await turn();
    assert.equal((await list('fresh', 10)).body, '[{"name":"own"},{"name":"theirs"}]');
    await other.plants.delete('fresh', 1n);
    await turn();
    assert.equal((await list('fresh', 10)).body, '[{"name":"theirs"}]');
  });

  it("keeps an owner's page while another owner writes, and reads it again after its own write", async () => {
    await store.create('quiet', { id: 1n, name: 'q' });
    await known('quiet');
    const kept = await list('quiet', 10);
    await store.create('busy', { id: 1n, name: 'b' });
    await known('quiet');
    assert.equal(await list('quiet', 10), kept, "another owner's write leaves the page in place");
    await store.create('quiet', { id: 2n, name: 'r' });
    await known('quiet');
    assert.equal((await list('quiet', 10)).body, '[{"name":"q"},{"name":"r"}]');
  });

  it("keeps the owner's first page across its own creates, and reads it again after its delete", async () => {
    for (const id of [1n, 2n, 3n]) await store.create('appends', { id, name: `p${id}` });
    await known('appends');
    const first = await list('appends', 2);
    assert.equal(first.body, '[{"name":"p1"},{"name":"p2"}]');
    const lastPage = await list('appends', 2, first.next);
    assert.equal(lastPage.body, '[{"name":"p3"}]');

    await store.create('appends', { id: 4n, name: 'p4' });
    await known('appends');
    assert.equal(await list('appends', 2), first, 'an append cannot change a page that had a next page');
    const grown = await list('appends', 2, first.next);
    assert.deepEqual([grown.body, grown.next], ['[{"name":"p3"},{"name":"p4"}]', undefined], 'the last page grew');

    await store.delete('appends', 2n);
    await known('appends');
    assert.equal((await list('appends', 2)).body, '[{"name":"p1"},{"name":"p3"}]');
  });

  it("keeps the owner's first page across deletes of plants after it, until its next page may be gone", async () => {
    for (const id of [1n, 2n, 3n, 4n]) await store.create('deletes', { id, name: `p${id}` });
    await known('deletes');
    const first = await list('deletes', 2);
    await store.delete('deletes', 4n);
    await known('deletes');
    assert.equal(await list('deletes', 2), first, 'the deleted plant was not on it, and p3 still follows it');
    await store.delete('deletes', 3n);
    await known('deletes');
    const alone = await list('deletes', 2);
    assert.deepEqual([alone.body, alone.next], ['[{"name":"p1"},{"name":"p2"}]', undefined], 'no plant follows it now');
    await store.delete('deletes', 1n);
    await known('deletes');
    assert.equal((await list('deletes', 2)).body, '[{"name":"p2"}]');
  });

  it('keeps a page asked for by cursor only when it is asked for again', async () => {
    for (const id of [1n, 2n, 3n]) await store.create('walk', { id, name: `p${id}` });
    await known('walk');
    const { next } = await list('walk', 1);
    const once = await list('walk', 1, next);
    const twice = await list('walk', 1, next);
    assert.notEqual(twice, once, 'a walk reads every page once, and keeps none of them');
    assert.deepEqual(twice, once);
    assert.equal(await list('walk', 1, next), twice, 'asked for twice, the page is kept');
  });

  it('keeps even the last page across a replayed create and a delete of nothing', async () => {
    await store.create('steady', { id: 1n, name: 'only' });
    await known('steady');
    const last = await list('steady', 10);
    assert.equal(last.next, undefined);
    assert.equal(await store.create('steady', { id: 1n, name: 'only' }), 'replayed');
    assert.equal(await store.delete('steady', 99n), false);
    await known('steady');
    assert.equal(await list('steady', 10), last, 'nothing changed, so nothing is read again');
  });

  it('reads every time with no memory for pages', async () => {
    const first = await off.page('off', 10);
    const again = await off.page('off', 10);
    assert.notEqual(again, first);
    assert.deepEqual(again, first);
  });

  it('answers a cursor it did not issue with a rejection, not a throw', async () => {
    const refused = store.page('reuse', 1, 'not-a-cursor');
    assert.ok(refused instanceof Promise);
    await assert.rejects(refused, { name: 'InvalidCursorError' });
  });
});
