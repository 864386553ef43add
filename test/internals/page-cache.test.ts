// The list page cache: a page is reused only under the change epoch it was
// read at, and the cache stays within its entry and byte bounds, dropping the
// oldest page first.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PageCache, type PageEntry } from '../../src/routes/page-cache.js';

const page = (epoch: number, body: string, link?: string): PageEntry => ({ epoch, body, link });

describe('list page cache', () => {
  it('returns a page only under the epoch it was stored at', () => {
    const cache = new PageCache(1024);
    const entry = page(7, '[{"name":"a"}]', '</plants?limit=1&cursor=x>; rel="next"');
    cache.set('alice\n1\n', entry);
    assert.deepEqual(cache.get('alice\n1\n', 7), entry);
    assert.equal(cache.get('alice\n1\n', 8), undefined);
    assert.equal(cache.get('alice\n2\n', 7), undefined);
  });

  it('replaces the page stored under the same key', () => {
    const cache = new PageCache(10);
    cache.set('k', page(1, '123456'));
    cache.set('k', page(2, 'abcdef'));
    // Counted once: 6 bytes, not 12, so it is still there.
    assert.deepEqual(cache.get('k', 2), page(2, 'abcdef'));
    assert.equal(cache.get('k', 1), undefined);
  });

  it('stays within maxBytes, dropping the oldest pages first', () => {
    const cache = new PageCache(10);
    cache.set('a', page(1, 'aaaa'));
    cache.set('b', page(1, 'bbbb'));
    cache.set('c', page(1, 'cccc'));
    assert.equal(cache.get('a', 1), undefined);
    assert.equal(cache.get('b', 1)?.body, 'bbbb');
    assert.equal(cache.get('c', 1)?.body, 'cccc');
  });

  it('stays within maxEntries, dropping the oldest pages first', () => {
    const cache = new PageCache(1024, 2);
    for (const key of ['a', 'b', 'c']) cache.set(key, page(1, key));
    assert.deepEqual(
      ['a', 'b', 'c'].map((key) => cache.get(key, 1)?.body),
      [undefined, 'b', 'c'],
    );
  });

  it('does not keep a page larger than maxBytes', () => {
    const cache = new PageCache(10);
    cache.set('big', page(1, 'x'.repeat(11)));
    assert.equal(cache.get('big', 1), undefined);
    cache.set('small', page(1, 'y'.repeat(10)));
    assert.equal(cache.get('small', 1)?.body, 'y'.repeat(10));
  });

  it('keeps nothing with maxBytes 0 (page reuse off)', () => {
    const cache = new PageCache(0);
    cache.set('k', page(1, '[]'));
    assert.equal(cache.get('k', 1), undefined);
  });
});
