// The token cache in front of a real SQLite token store: what it remembers,
// for how long (which bounds how late a revocation is noticed), and how many.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { NOT_CACHED, TokenCache } from '../../src/auth/token-cache.js';
import { hashToken, issueToken } from '../../src/auth/tokens.js';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/store.sqlite.js';

describe('token cache', () => {
  let dir: string;
  let store: SqliteStore;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'plant-store-token-cache-'));
    store = await openSqliteStore({ path: join(dir, 'plants.db'), durability: 'full' });
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A new token and its record as the store returns it. */
  const issue = async (owner: string) => {
    const { token } = await issueToken(store.tokens, { owner });
    return { token, record: (await store.tokens.findByHash(hashToken(token)))! };
  };

  it('answers a lookup from the store, then from memory', async () => {
    const cache = new TokenCache(store.tokens, 60_000);
    const { token, record } = await issue('alice');
    assert.equal(cache.cached(token), NOT_CACHED);
    assert.deepEqual(await cache.lookup(token), record);
    // Revoked in the store: the remembered lookup still answers within its lifetime.
    assert.equal(await store.tokens.revoke(record.id, new Date()), true);
    assert.deepEqual(cache.cached(token), record);
    assert.deepEqual(await cache.lookup(token), record);
  });

  it('remembers that a token is unknown, too', async () => {
    const cache = new TokenCache(store.tokens, 60_000);
    const { token, record } = await issue('bob');
    const unknown = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    assert.equal(await cache.lookup(unknown), undefined);
    assert.equal(cache.cached(unknown), undefined);
    await store.tokens.insert({ ...record, id: `${record.id}-2` }, hashToken(unknown));
    assert.equal(await cache.lookup(unknown), undefined);
  });

  it('forgets a lookup after ttlMs, so a revocation is seen within that time', async () => {
    const cache = new TokenCache(store.tokens, 50);
    const { token, record } = await issue('carol');
    assert.equal((await cache.lookup(token))?.revokedAt, undefined);
    await store.tokens.revoke(record.id, new Date());
    await delay(80);
    assert.equal(cache.cached(token), NOT_CACHED);
    assert.ok((await cache.lookup(token))?.revokedAt instanceof Date);
  });

  it('remembers nothing with ttlMs 0', async () => {
    const cache = new TokenCache(store.tokens, 0);
    const { token, record } = await issue('dave');
    assert.deepEqual(await cache.lookup(token), record);
    assert.equal(cache.cached(token), NOT_CACHED);
    await store.tokens.revoke(record.id, new Date());
    assert.ok((await cache.lookup(token))?.revokedAt instanceof Date);
  });

  it('keeps at most maxEntries lookups, dropping the oldest', async () => {
    const cache = new TokenCache(store.tokens, 60_000, 2);
    const [a, b, c] = await Promise.all(['e1', 'e2', 'e3'].map(issue));
    await cache.lookup(a!.token);
    await cache.lookup(b!.token);
    await cache.lookup(c!.token);
    assert.equal(cache.cached(a!.token), NOT_CACHED);
    assert.deepEqual(cache.cached(b!.token), b!.record);
    assert.deepEqual(cache.cached(c!.token), c!.record);
  });

  it('counts a lookup made again after expiry as the newest', async () => {
    const cache = new TokenCache(store.tokens, 600, 3);
    const [a, b, c, d] = await Promise.all(['f1', 'f2', 'f3', 'f4'].map(issue));
    await cache.lookup(a!.token);
    await delay(350);
    await cache.lookup(b!.token);
    await delay(300); // a has expired, b has not
    await cache.lookup(a!.token); // read again: now the newest entry
    await cache.lookup(c!.token);
    await cache.lookup(d!.token); // one too many: the oldest goes, b
    assert.deepEqual(cache.cached(a!.token), a!.record);
    assert.deepEqual(cache.cached(c!.token), c!.record);
    assert.deepEqual(cache.cached(d!.token), d!.record);
  });
});
