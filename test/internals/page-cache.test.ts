// List page reuse: a page is reused only while its owner's plants did not
// change since it was read (appends aside for a page with a next page, and
// deletions outside it), the cache stays within its entry and byte bounds
// (least recently used first out), a walk through the list by cursor does not
// fill it, and GET /plants pages come from a real SQLite store or, while
// nothing changed, from memory.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ListPages, PageCache, type PageEntry } from '../../src/routes/page-cache.js';
import type { PlantStore } from '../../src/store/store.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.sqlite.js';

const page = (epoch: number, body: string, link?: string): PageEntry => ({ read: epoch, body, link, etag: '"t"' });
/** The version under which page(epoch, …) was read. */
const v = (changed: number, appended = changed) => ({ changed, appended, deletions: [] });

describe('list page cache', () => {
  it('returns a page only while nothing changed since it was read', () => {
    const cache = new PageCache(1024);
    const entry = page(7, '[{"name":"a"}]', '</plants?limit=1&cursor=x>; rel="next"');
    cache.set('alice\n1\n', entry);
    assert.deepEqual(cache.get('alice\n1\n', v(7)), entry);
    assert.equal(cache.get('alice\n1\n', v(8)), undefined);
    assert.equal(cache.get('alice\n2\n', v(7)), undefined);
  });

  it('keeps a page across later deletions outside its span only', () => {
    const cache = new PageCache(1024);
    const entry = { ...page(5, '[{"name":"a"}]', '<next>'), span: { from: 10n, to: 20n } };
    cache.set('k', entry);
    const deleted = (...positions: bigint[]) => ({
      ...v(3, 9),
      deletions: positions.map((position, i) => ({ at: 6 + i, position })),
    });
    assert.deepEqual(cache.get('k', deleted(10n, 21n, 500n)), entry, 'before it and after it');
    assert.equal(cache.get('k', deleted(21n, 11n)), undefined, 'within it');
    assert.equal(cache.get('k', deleted(20n)), undefined, 'its last plant');
    const earlier = { ...v(3, 9), deletions: [{ at: 4, position: 15n }] };
    assert.deepEqual(cache.get('k', earlier), entry, 'a deletion before the page was read is in it');
  });

  it('keeps a page with a next page across appends, and only the last page goes with them', () => {
    const cache = new PageCache(1024);
    const full = page(3, '[{"name":"a"}]', '</plants?limit=1&cursor=x>; rel="next"');
    const last = page(3, '[{"name":"z"}]');
    cache.set('first', full);
    cache.set('last', last);
    assert.deepEqual(cache.get('first', v(3, 9)), full, 'plants appended after it: the page is the same');
    assert.equal(cache.get('last', v(3, 9)), undefined, 'the last page may have grown');
    assert.deepEqual(cache.get('last', v(3)), last);
    assert.equal(cache.get('first', v(4, 9)), undefined, 'anything else that changed');
  });

  it('replaces the page stored under the same key', () => {
    const cache = new PageCache(10);
    cache.set('k', page(1, '123456'));
    cache.set('k', page(2, 'abcdef'));
    // Counted once: 6 bytes, not 12, so it is still there.
    assert.deepEqual(cache.get('k', v(2)), page(2, 'abcdef'));
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

  it('keeps nothing with maxBytes 0 (page reuse off)', () => {
    const cache = new PageCache(0);
    cache.set('k', page(1, '[]'));
    assert.equal(cache.get('k', v(1)), undefined);
  });
});

describe('list pages on SQLite', () => {
  let dir: string;
  let store: SqliteStore;
  let other: SqliteStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-list-pages-'));
    store = await openSqliteStore({ path: join(dir, 'plants.db'), durability: 'normal' });
    // A second connection to the same file, as another worker or process has.
    other = await openSqliteStore({ path: join(dir, 'plants.db'), durability: 'normal', migrate: false });
  });
  after(async () => {
    await other.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** ListPages over the store, counting the pages it had to read from it. */
  function pages(cacheBytes: number) {
    let reads = 0;
    const plants = store.plants;
    const counted: Pick<PlantStore, 'page' | 'changeEpoch'> = {
      page: (...args) => (reads++, plants.page(...args)),
      changeEpoch: (owner) => plants.changeEpoch(owner),
    };
    const listPages = new ListPages(counted, cacheBytes);
    return {
      page: (owner: string, limit: number, cursor?: string) => listPages.page(owner, limit, cursor),
      reads: () => reads,
    };
  }
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  /** Turns until the store can tell the owner's version again (it asks its writer thread after a write). */
  async function known(owner: string): Promise<void> {
    while (store.plants.changeEpoch(owner) === undefined) await turn();
  }

  it('reads a page with its Link, then reuses it while nothing changes', async () => {
    await store.plants.create('reuse', { id: 1n, name: 'a' });
    await store.plants.create('reuse', { id: 2n, name: 'b', tag: 't' });
    await known('reuse');
    const p = pages(1 << 20);
    const first = await p.page('reuse', 1);
    assert.equal(first.body, '[{"name":"a"}]');
    assert.match(first.link!, /^<\/plants\?limit=1&cursor=[^>]+>; rel="next"$/);
    const cursor = /cursor=([^>]+)>/.exec(first.link!)![1]!;
    const last = await p.page('reuse', 1, cursor);
    assert.deepEqual([last.body, last.link], ['[{"name":"b","tag":"t"}]', undefined]);
    assert.equal(p.reads(), 2);
    await turn();
    assert.deepEqual(await p.page('reuse', 1), first);
    assert.equal(p.reads(), 2, 'answered from memory');
    // Another owner, another limit: other pages.
    await p.page('someone-else', 1);
    await p.page('reuse', 2);
    assert.equal(p.reads(), 4);
  });

  it('reads again after a write through this store or another connection', async () => {
    const p = pages(1 << 20);
    assert.equal((await p.page('fresh', 10)).body, '[]');
    await store.plants.create('fresh', { id: 1n, name: 'own' });
    assert.equal((await p.page('fresh', 10)).body, '[{"name":"own"}]');
    await other.plants.create('fresh', { id: 2n, name: 'theirs' });
    await turn();
    assert.equal((await p.page('fresh', 10)).body, '[{"name":"own"},{"name":"theirs"}]');
    await other.plants.delete('fresh', 1n);
    await turn();
    assert.equal((await p.page('fresh', 10)).body, '[{"name":"theirs"}]');
    assert.equal(p.reads(), 4);
  });

  it("keeps an owner's page while another owner writes, and reads it again after its own write", async () => {
    await store.plants.create('quiet', { id: 1n, name: 'q' });
    await known('quiet');
    const p = pages(1 << 20);
    await p.page('quiet', 10);
    await store.plants.create('busy', { id: 1n, name: 'b' });
    await known('quiet');
    assert.equal((await p.page('quiet', 10)).body, '[{"name":"q"}]');
    assert.equal(p.reads(), 1, "another owner's write leaves the page in place");
    await store.plants.create('quiet', { id: 2n, name: 'r' });
    await known('quiet');
    assert.equal((await p.page('quiet', 10)).body, '[{"name":"q"},{"name":"r"}]');
    assert.equal(p.reads(), 2);
  });

  it("keeps the owner's first page across its own creates, and reads it again after its delete", async () => {
    for (const id of [1n, 2n, 3n]) await store.plants.create('appends', { id, name: `p${id}` });
    await known('appends');
    const p = pages(1 << 20);
    const first = await p.page('appends', 2);
    assert.equal(first.body, '[{"name":"p1"},{"name":"p2"}]');
    const cursor = /cursor=([^>]+)>/.exec(first.link!)![1]!;
    assert.equal((await p.page('appends', 2, cursor)).body, '[{"name":"p3"}]');
    assert.equal(p.reads(), 2);

    await store.plants.create('appends', { id: 4n, name: 'p4' });
    await known('appends');
    assert.deepEqual(await p.page('appends', 2), first, 'an append cannot change a page that had a next page');
    assert.equal(p.reads(), 2);
    const grown = await p.page('appends', 2, cursor);
    assert.deepEqual([grown.body, grown.link], ['[{"name":"p3"},{"name":"p4"}]', undefined], 'the last page grew');
    assert.equal(p.reads(), 3);

    await store.plants.delete('appends', 2n);
    await known('appends');
    assert.equal((await p.page('appends', 2)).body, '[{"name":"p1"},{"name":"p3"}]');
    assert.equal(p.reads(), 4);
  });

  it("keeps the owner's first page across deletes of plants after it, until its next page may be gone", async () => {
    for (const id of [1n, 2n, 3n, 4n]) await store.plants.create('deletes', { id, name: `p${id}` });
    await known('deletes');
    const p = pages(1 << 20);
    const first = await p.page('deletes', 2);
    await store.plants.delete('deletes', 4n);
    await known('deletes');
    assert.deepEqual(await p.page('deletes', 2), first, 'the deleted plant was not on it, and p3 still follows it');
    assert.equal(p.reads(), 1);
    await store.plants.delete('deletes', 3n);
    await known('deletes');
    const alone = await p.page('deletes', 2);
    assert.deepEqual([alone.body, alone.link], ['[{"name":"p1"},{"name":"p2"}]', undefined], 'no plant follows it now');
    assert.equal(p.reads(), 2);
    await store.plants.delete('deletes', 1n);
    await known('deletes');
    assert.equal((await p.page('deletes', 2)).body, '[{"name":"p2"}]');
    assert.equal(p.reads(), 3);
  });

  it('keeps a page asked for by cursor only when it is asked for again', async () => {
    for (const id of [1n, 2n, 3n]) await store.plants.create('walk', { id, name: `p${id}` });
    await known('walk');
    const p = pages(1 << 20);
    const cursor = /cursor=([^>]+)>/.exec((await p.page('walk', 1)).link!)![1]!;
    await p.page('walk', 1, cursor);
    await p.page('walk', 1, cursor);
    assert.equal(p.reads(), 3, 'a walk reads every page once, and keeps none of them');
    await p.page('walk', 1, cursor);
    await p.page('walk', 1);
    assert.equal(p.reads(), 3, 'asked for twice, the page is kept');
  });

  it('keeps even the last page across a replayed create and a delete of nothing', async () => {
    await store.plants.create('steady', { id: 1n, name: 'only' });
    await known('steady');
    const p = pages(1 << 20);
    const last = await p.page('steady', 10);
    assert.equal(last.link, undefined);
    assert.equal(await store.plants.create('steady', { id: 1n, name: 'only' }), 'replayed');
    assert.equal(await store.plants.delete('steady', 99n), false);
    await known('steady');
    assert.deepEqual(await p.page('steady', 10), last);
    assert.equal(p.reads(), 1, 'nothing changed, so nothing is read again');
  });

  it('reads every time with cacheBytes 0', async () => {
    const p = pages(0);
    await p.page('off', 10);
    await p.page('off', 10);
    assert.equal(p.reads(), 2);
  });
});
