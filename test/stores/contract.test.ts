// The PlantStore / TokenStore contract, run against every store.
import assert from 'node:assert/strict';
import { before, it } from '../helpers/requirements.js';
import { hashToken, InvalidExpiryError, issueFirstToken, issueToken } from '../../src/auth/tokens.js';
import { INT64_MAX, INT64_MIN } from '../../src/schemas/int64.js';
import {
  InvalidCursorError,
  StoreUnavailableError,
  type PlantFilter,
  type PlantRecord,
  type PlantStore,
  type Store,
} from '../../src/store/store.js';
import { describeEachStore, describeOnStore, type StoreFixture } from '../helpers/stores.js';
import { listPlants } from '../helpers/list-plants.js';
import Database from 'better-sqlite3';
import pg from 'pg';
import { SQL as SQLITE_PLANTS } from '../../src/store/sqlite/plants-store.sqlite.js';
import { SQL as POSTGRES_PAGES } from '../../src/store/postgres/page-reader.postgres.js';

async function listAll(
  plants: PlantStore,
  owner: string,
  pageSize: number,
  filter?: PlantFilter,
): Promise<PlantRecord[]> {
  const all: PlantRecord[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await listPlants(plants, owner, pageSize, cursor, filter);
    all.push(...page.plants);
    if (page.next === undefined) return all;
    cursor = page.next;
  }
  throw new Error('paging did not end');
}

// Each test and hook fails after this rather than hanging (a migration lock
// left on a pooled connection once made a start wait for an hour).
const TIMEOUT = 30_000;

// Also through PgBouncer in transaction pooling mode, where every statement
// may run on another server connection.
const describeContract = (title: string, body: (fx: StoreFixture) => void) =>
  describeEachStore(title, body, ['sqlite', 'postgres', 'pgbouncer']);

describeContract('store contract', (fx) => {
  let store: Store;
  before(
    async () => {
      store = await fx.open();
    },
    { timeout: TIMEOUT },
  );

  it('creates, replays identical content and reports conflicts', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    assert.equal(await p.create('alice', { id: 1n, name: 'fern', tag: 'green' }), 'created');
    assert.equal(await p.create('alice', { id: 1n, name: 'fern', tag: 'green' }), 'replayed');
    assert.equal(await p.create('alice', { id: 1n, name: 'fern', tag: 'blue' }), 'conflict');
    assert.equal(await p.create('alice', { id: 1n, name: 'fern' }), 'conflict');
    assert.equal(await p.create('alice', { id: 2n, name: 'moss' }), 'created');
    assert.equal(await p.create('alice', { id: 2n, name: 'moss', tag: '' }), 'conflict');
    assert.equal(await p.create('alice', { id: 2n, name: 'moss' }), 'replayed');
    assert.deepEqual(await listAll(p, 'alice', 10), [{ name: 'fern', tag: 'green' }, { name: 'moss' }]);
  });

  it('keeps int64 ids exact, including both extremes and neighbours past 2^53', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    const ids = [INT64_MIN, INT64_MAX, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n, 0n];
    for (const id of ids) assert.equal(await p.create('int64', { id, name: `n${id}` }), 'created');
    for (const id of ids) assert.equal(await p.create('int64', { id, name: `n${id}` }), 'replayed');
    assert.deepEqual(
      (await listAll(p, 'int64', 100)).map((x) => x.name),
      ids.map((id) => `n${id}`),
    );
    assert.equal(await p.delete('int64', 2n ** 53n + 1n), true);
    assert.equal(await p.delete('int64', 2n ** 53n + 1n), false);
    assert.equal(await p.create('int64', { id: 2n ** 53n, name: `n${2n ** 53n}` }), 'replayed');
    assert.equal(await p.delete('int64', INT64_MIN), true);
    assert.equal(await p.delete('int64', INT64_MAX), true);
  });

  it('isolates owners: same id for two owners, no cross-owner list or delete', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    assert.equal(await p.create('o1', { id: 7n, name: 'one' }), 'created');
    assert.equal(await p.create('o2', { id: 7n, name: 'two' }), 'created');
    assert.deepEqual(await listAll(p, 'o1', 10), [{ name: 'one' }]);
    assert.deepEqual(await listAll(p, 'o2', 10), [{ name: 'two' }]);
    assert.equal(await p.delete('o1', 8n), false);
    assert.equal(await p.delete('o2', 7n), true);
    assert.deepEqual(await listAll(p, 'o1', 10), [{ name: 'one' }]);
    assert.deepEqual(await listAll(p, 'o2', 10), []);
  });

  it('pages in insertion order through opaque cursors, each plant exactly once', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    const names = Array.from({ length: 53 }, (_, i) => `p${i}`);
    // Ids deliberately out of order: pages follow insertion, not id order.
    for (const [i, name] of names.entries()) await p.create('pager', { id: BigInt((i * 37) % 53) - 20n, name });
    for (const size of [1, 5, 52, 53, 54]) {
      assert.deepEqual(
        (await listAll(p, 'pager', size)).map((x) => x.name),
        names,
        `page size ${size}`,
      );
    }
    const first = await listPlants(p, 'pager', 53);
    assert.equal(first.next, undefined, 'no next page when everything fit');
  });

  it('keeps paging stable while plants are inserted and deleted', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    for (let i = 0; i < 30; i++) await p.create('stable', { id: BigInt(i), name: `s${i}` });
    const seen: string[] = [];
    let cursor: string | undefined;
    let round = 0;
    do {
      const page = await listPlants(p, 'stable', 7, cursor);
      seen.push(...page.plants.map((x) => x.name));
      cursor = page.next;
      // Delete a plant already seen and add a new one at the end.
      await p.delete('stable', BigInt(round));
      await p.create('stable', { id: 1000n + BigInt(round), name: `new${round}` });
      round++;
    } while (cursor !== undefined && round < 50);
    const original = Array.from({ length: 30 }, (_, i) => `s${i}`);
    assert.deepEqual(seen.slice(0, 30), original, 'every original plant once, in order');
    assert.equal(new Set(seen).size, seen.length, 'no repeats');
  });

  it('rejects cursors it did not issue', { timeout: TIMEOUT }, async () => {
    for (const bad of ['zzz', '', 'AAAA', Buffer.from('s-1').toString('base64url'), 'czE=', 'x'.repeat(300)]) {
      // Called here, not in an async function: a store that threw instead of rejecting would fail the test.
      const answer = store.plants.page('x', 5, bad);
      assert.ok(answer instanceof Promise, `cursor ${JSON.stringify(bad)}: a rejection, not a throw`);
      await assert.rejects(answer, InvalidCursorError, `cursor ${JSON.stringify(bad)}`);
    }
  });

  it(
    'tags each page: the same page the same tag, a page that changed (its next page too) another',
    { timeout: TIMEOUT },
    async () => {
      const p = store.plants;
      for (const id of [1n, 2n]) await p.create('tagged', { id, name: `t${id}` });
      const whole = await p.page('tagged', 2);
      assert.match(whole.etag, /^"[A-Za-z0-9_-]{27}"$/, 'a strong entity tag');
      assert.equal((await p.page('tagged', 2)).etag, whole.etag, 'read again');
      assert.notEqual((await p.page('tagged', 1)).etag, whole.etag, 'another page');
      await p.create('tagged', { id: 3n, name: 't3' });
      const first = await p.page('tagged', 2);
      assert.equal(first.body, whole.body);
      assert.notEqual(first.next, undefined);
      assert.notEqual(first.etag, whole.etag, 'the same plants, but now with a next page');
      const last = await p.page('tagged', 2, first.next);
      await p.create('tagged', { id: 4n, name: 't4' });
      assert.notEqual((await p.page('tagged', 2, first.next)).etag, last.etag, 'the last page grew');
      assert.equal((await p.page('tagged', 2)).etag, first.etag, 'the first page is as it was');
    },
  );

  it('answers concurrent duplicate creates of one id with one row', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => p.create('dup', { id: 42n, name: 'same' })));
    assert.equal(outcomes.filter((o) => o === 'created').length, 1);
    assert.equal(outcomes.filter((o) => o === 'replayed').length, 19);
    assert.deepEqual(await listAll(p, 'dup', 100), [{ name: 'same' }]);
  });

  it(
    'stores tokens by hash, lists them without secrets, and revokes by id or token',
    { timeout: TIMEOUT },
    async () => {
      const before = (await store.tokens.list()).length;
      // A lifetime no date can hold would be stored as no expiry at all: refused before anything is written.
      for (const expiresInMs of [Infinity, NaN, 9e15])
        await assert.rejects(issueToken(store.tokens, { owner: 'alice', expiresInMs }), InvalidExpiryError);
      assert.equal((await store.tokens.list()).length, before);
      const a = await issueToken(store.tokens, { owner: 'alice', expiresInMs: 60_000 });
      const b = await issueToken(store.tokens, { owner: 'bob', scopes: ['plants:read'] });
      assert.equal((await store.tokens.list()).length, before + 2);
      const found = await store.tokens.findByHash(hashToken(a.token));
      assert.equal(found?.owner, 'alice');
      assert.deepEqual(found?.scopes, ['plants:read', 'plants:write']);
      assert.ok(found?.expiresAt && Math.abs(found.expiresAt.getTime() - a.record.expiresAt!.getTime()) < 1000);
      assert.equal(await store.tokens.findByHash(hashToken(a.token + 'x')), undefined);
      assert.deepEqual((await store.tokens.findByHash(hashToken(b.token)))?.scopes, ['plants:read']);
      const listed = await store.tokens.list();
      assert.ok(listed.some((t) => t.id === a.record.id) && listed.some((t) => t.id === b.record.id));
      assert.ok(!JSON.stringify(listed).includes(a.token));

      assert.equal(await store.tokens.revoke(a.record.id, new Date()), true);
      assert.ok((await store.tokens.findByHash(hashToken(a.token)))?.revokedAt);
      assert.equal(await store.tokens.revoke(hashToken(b.token), new Date()), true);
      assert.ok((await store.tokens.findByHash(hashToken(b.token)))?.revokedAt);
      assert.equal(await store.tokens.revoke('tok_nope', new Date()), false);
    },
  );

  it('finds many tokens by id in one call, leaving out ids it does not hold', { timeout: TIMEOUT }, async () => {
    const issued = [];
    for (let i = 0; i < 300; i++) issued.push(await issueToken(store.tokens, { owner: `by-id-${i % 7}` }));
    await store.tokens.revoke(issued[3]!.record.id, new Date());
    const ids = [...issued.map((t) => t.record.id), 'tok_nope', "tok_' OR 1=1 --"];
    const found = await store.tokens.findByIds(ids);
    assert.equal(found.length, issued.length);
    const byId = new Map(found.map((r) => [r.id, r]));
    for (const { record } of issued) assert.equal(byId.get(record.id)?.owner, record.owner);
    assert.ok(byId.get(issued[3]!.record.id)?.revokedAt);
    assert.equal(byId.get(issued[4]!.record.id)?.revokedAt, undefined);
    assert.deepEqual(await store.tokens.findByIds([]), []);
  });

  it("caps kept events per owner: one owner's writes never prune another's", { timeout: TIMEOUT }, async () => {
    const ownerEvents = async (owner: string) =>
      (await store.events.ownerAfter(owner, 0n, INT64_MAX, 1000)).map((e) => e.id);
    const settled = async (owner: string, n: number) => {
      const deadline = performance.now() + 10_000;
      while ((await ownerEvents(owner)).length < n && performance.now() < deadline)
        await new Promise((r) => setTimeout(r, 20));
    };
    for (let i = 1n; i <= 3n; i++) await store.plants.create('fair-quiet', { id: i, name: `q${i}` });
    await settled('fair-quiet', 3);
    const quiet = await ownerEvents('fair-quiet');
    await Promise.all(
      Array.from({ length: 40 }, (_, i) => store.plants.create('fair-loud', { id: BigInt(i + 1), name: `l${i}` })),
    );
    await settled('fair-loud', 40);
    const loud = await ownerEvents('fair-loud');
    assert.equal(loud.length, 40);
    // A cap of 5 per owner, nothing old enough to go by age.
    while ((await store.events.prune(0, 5)).more);
    assert.deepEqual(await ownerEvents('fair-quiet'), quiet, "the quiet owner's events are all kept");
    assert.deepEqual(await ownerEvents('fair-loud'), loud.slice(-5), "the loud owner's newest five are kept");
    // The quiet owner resumes from before its first event; the loud one from its 35th or later.
    assert.ok((await store.events.bounds('fair-quiet')).pruned < quiet[0]!);
    assert.equal((await store.events.bounds('fair-loud')).pruned, loud[34]);
    // More writes of the loud owner, pruned again: still nothing of the quiet one.
    for (let i = 41n; i <= 45n; i++) await store.plants.create('fair-loud', { id: i, name: `l${i}` });
    await settled('fair-loud', 10);
    while ((await store.events.prune(0, 5)).more);
    assert.deepEqual(await ownerEvents('fair-quiet'), quiet);
    assert.equal((await ownerEvents('fair-loud')).length, 5);
  });

  it('bulk-inserts plants of one owner in order, skipping ids the owner has', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    await p.create('bulk', { id: 2n, name: 'kept' });
    const stored = await p.insertMany('bulk', [
      { id: 1n, name: 'one' },
      { id: 2n, name: 'ignored' },
      { id: -(2n ** 63n), name: 'min', tag: 't' },
    ]);
    assert.equal(stored, 2);
    assert.deepEqual(await listAll(p, 'bulk', 2), [{ name: 'kept' }, { name: 'one' }, { name: 'min', tag: 't' }]);
    assert.equal(await p.delete('bulk', -(2n ** 63n)), true);
  });

  it('answers ping while open, and refuses it as unavailable once closed', { timeout: TIMEOUT }, async () => {
    await store.ping();
    const closing = await fx.open();
    await closing.ping();
    await closing.close();
    await assert.rejects(closing.ping(), StoreUnavailableError);
    await store.ping(); // another store on the same database is not affected
  });
});

describeContract('first token', (fx) => {
  it('is created once when several servers race on an empty store', { timeout: TIMEOUT }, async () => {
    // Two stores = two connections (or pools), as two server processes would have.
    const [a, b] = [await fx.open(), await fx.open()];
    const issued = await Promise.all(
      Array.from({ length: 10 }, (_, i) => issueFirstToken((i % 2 ? a : b).tokens, { owner: 'admin' })),
    );
    assert.equal(issued.filter((t) => t !== undefined).length, 1);
    assert.equal((await a.tokens.list()).length, 1);
    assert.equal(await issueFirstToken(b.tokens, { owner: 'admin' }), undefined);
  });
});

describeContract('reads by id and by tag', (fx) => {
  let store: Store;
  before(
    async () => {
      store = await fx.open();
    },
    { timeout: TIMEOUT },
  );

  it("gets one plant by id, only the owner's, with exact int64 ids", { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    await p.create('reader', { id: INT64_MAX, name: 'max', tag: 'edge' });
    await p.create('reader', { id: 2n ** 53n + 1n, name: 'past 2^53' });
    await p.create('other-reader', { id: 5n, name: 'theirs' });
    assert.deepEqual(await p.get('reader', INT64_MAX), { name: 'max', tag: 'edge' });
    assert.deepEqual(await p.get('reader', 2n ** 53n + 1n), { name: 'past 2^53' });
    assert.equal(await p.get('reader', 2n ** 53n), undefined);
    assert.equal(await p.get('reader', 5n), undefined, "another owner's id is none of the reader's");
    assert.deepEqual(await p.get('other-reader', 5n), { name: 'theirs' });
    assert.equal(await p.delete('reader', INT64_MAX), true);
    assert.equal(await p.get('reader', INT64_MAX), undefined, 'a deleted plant is gone at once');
  });

  it('lists only the plants with a tag, in insertion order, paged, each once', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    const tagged: string[] = [];
    for (let i = 0; i < 40; i++) {
      // Ids out of order; every third plant tagged, some untagged, one with the tag in another case.
      const tag = i % 3 === 0 ? 'fern' : i % 3 === 1 ? 'moss' : undefined;
      await p.create('tagger', { id: BigInt((i * 17) % 40) - 7n, name: `t${i}`, ...(tag && { tag }) });
      if (tag === 'fern') tagged.push(`t${i}`);
    }
    await p.create('tagger', { id: 1000n, name: 'upper', tag: 'Fern' });
    await p.create('tag-neighbour', { id: 1n, name: 'not mine', tag: 'fern' });
    for (const size of [1, 4, 13, 14, 15]) {
      const names = (await listAll(p, 'tagger', size, { tag: 'fern' })).map((x) => x.name);
      assert.deepEqual(names, tagged, `page size ${size}`);
    }
    assert.deepEqual(await listAll(p, 'tagger', 5, { tag: 'Fern' }), [{ name: 'upper', tag: 'Fern' }]);
    assert.deepEqual(await listAll(p, 'tagger', 5, { tag: 'none such' }), []);
    assert.equal((await listAll(p, 'tagger', 100)).length, 41, 'the unfiltered list is unchanged');
    // Deleting and appending while paging: each original tagged plant once, in order.
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let round = 0; round < 50; round++) {
      const page = await listPlants(p, 'tagger', 3, cursor, { tag: 'fern' });
      seen.push(...page.plants.map((x) => x.name));
      await p.create('tagger', { id: 2000n + BigInt(round), name: `late${round}`, tag: 'fern' });
      if (page.next === undefined) break;
      cursor = page.next;
    }
    assert.deepEqual(seen.slice(0, tagged.length), tagged);
    assert.equal(new Set(seen).size, seen.length, 'no repeats');
  });

  it('accepts a cursor only in the list that issued it', { timeout: TIMEOUT }, async () => {
    const p = store.plants;
    for (let i = 0; i < 4; i++) await p.create('cursors', { id: BigInt(i), name: `c${i}`, tag: i % 2 ? 'a' : 'b' });
    const all = await listPlants(p, 'cursors', 1);
    const byA = await listPlants(p, 'cursors', 1, undefined, { tag: 'a' });
    assert.ok(all.next && byA.next);
    assert.deepEqual((await listPlants(p, 'cursors', 5, byA.next, { tag: 'a' })).plants, [{ name: 'c3', tag: 'a' }]);
    await assert.rejects(listPlants(p, 'cursors', 1, all.next, { tag: 'a' }), InvalidCursorError, 'unfiltered in a');
    await assert.rejects(listPlants(p, 'cursors', 1, byA.next), InvalidCursorError, 'a in the unfiltered list');
    await assert.rejects(listPlants(p, 'cursors', 1, byA.next, { tag: 'b' }), InvalidCursorError, 'a in b');
    await assert.rejects(listPlants(p, 'cursors', 1, byA.next, { tag: 'A' }), InvalidCursorError, 'a in A');
    await assert.rejects(listPlants(p, 'other', 1, byA.next, { tag: 'a' }), InvalidCursorError, 'another owner');
  });
});

// A filtered page reads a range of the (owner, tag, …) index, not the owner's whole list.
describeEachStore('the tag list uses its index', (fx) => {
  before(
    async () => {
      const store = await fx.open();
      for (let o = 0; o < 4; o++) {
        const plants = Array.from({ length: 5000 }, (_, i) => ({
          id: BigInt(i),
          name: `p${i}`,
          ...(i % 7 === 0 ? {} : { tag: `tag${i % 50}` }),
        }));
        await store.plants.insertMany(`indexed${o}`, plants);
      }
    },
    { timeout: TIMEOUT },
  );

  it('in its query plan', { timeout: TIMEOUT }, async () => {
    if (fx.kind === 'sqlite') {
      const db = new Database(fx.db, { readonly: true });
      try {
        const plan = db
          .prepare<[{ owner: string; tag: string; after: bigint; limit: number }], { detail: string }>(
            `EXPLAIN QUERY PLAN ${SQLITE_PLANTS.pageByTag.text}`,
          )
          .all({ owner: 'indexed1', tag: 'tag3', after: 10n, limit: 100 })
          .map((row) => row.detail);
        // The page and the look-ahead for the next plant: both searches of the tag index.
        const searches = plan.filter((d) => d.startsWith('SEARCH plants'));
        assert.equal(searches.length, 2, plan.join('\n'));
        for (const d of searches)
          assert.match(d, /USING (COVERING )?INDEX plants_owner_tag_seq \(owner=\? AND tag=\? AND (seq|rowid)>\?\)/);
        assert.ok(!plan.some((d) => /^SCAN plants|TEMP B-TREE/.test(d)), plan.join('\n'));
      } finally {
        db.close();
      }
      return;
    }
    const client = new pg.Client({ connectionString: fx.directDb });
    await client.connect();
    try {
      await client.query('ANALYZE plants');
      const { rows } = await client.query<{ 'QUERY PLAN': string }>({
        text: `EXPLAIN (FORMAT TEXT) ${POSTGRES_PAGES.readBatchByTag.text}`,
        values: [['indexed1'], [null], [null], [101], ['tag3']],
      });
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      assert.match(plan, /Index (Only )?Scan using plants_owner_tag_created_id on plants/, plan);
      assert.doesNotMatch(plan, /Seq Scan on plants|Sort\b/, plan);
    } finally {
      await client.end();
    }
  });
});

describeOnStore('sqlite', 'SQLite cursors', (fx) => {
  it('work only for the owner they were issued to and do not show the row number', { timeout: TIMEOUT }, async () => {
    const store = await fx.open();
    for (let i = 1n; i <= 3n; i++) {
      await store.plants.create('alice', { id: i, name: `a${i}` });
      await store.plants.create('bob', { id: i, name: `b${i}` });
    }
    const page = await listPlants(store.plants, 'alice', 1);
    assert.ok(page.next);
    assert.doesNotMatch(Buffer.from(page.next, 'base64url').toString('latin1'), /^s?\d+$/);
    assert.deepEqual((await listPlants(store.plants, 'alice', 5, page.next)).plants, [{ name: 'a2' }, { name: 'a3' }]);
    await assert.rejects(listPlants(store.plants, 'bob', 5, page.next), InvalidCursorError);
    // Another connection (another process) reads the same key from the file.
    const other = await fx.open();
    assert.deepEqual((await listPlants(other.plants, 'alice', 5, page.next)).plants, [{ name: 'a2' }, { name: 'a3' }]);
  });
});
