// GET /plants/{id}, GET /plants?tag=, and conditional GETs (ETag, If-None-Match, 304) over HTTP.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { useApp, type AppHarness } from '../helpers/app.js';
import { createOk, deletePlant, expectError, getPage, listAll, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

const TAG_MESSAGE = 'tag must be a string of 1 to 256 characters, without NUL or unpaired surrogates';

function get(h: AppHarness, token: string | undefined, url: string, headers: Record<string, string> = {}) {
  return h.request({ method: 'GET', url, token, headers });
}

/** The next page's URL from a Link header. */
function nextOf(link: unknown): string | undefined {
  return /^<([^>]+)>; rel="next"$/.exec(String(link))?.[1];
}

function suite(h: AppHarness) {
  describe('GET /plants/{id}', () => {
    it("answers 200 with the plant's name and tag, for ids as in delete", async () => {
      const t = await h.token(newOwner());
      await createOk(h, t, 9223372036854775807n, 'Max', 'edge');
      await createOk(h, t, 9007199254740993n, 'Past 2^53');
      await createOk(h, t, -9223372036854775808n, 'Min', '');
      for (const [id, body] of [
        ['9223372036854775807', { name: 'Max', tag: 'edge' }],
        ['9007199254740993', { name: 'Past 2^53' }],
        ['-9223372036854775808', { name: 'Min', tag: '' }],
      ] as const) {
        const res = await get(h, t, `/plants/${id}`);
        assert.equal(res.statusCode, 200, res.body);
        assert.deepEqual(JSON.parse(res.body), body);
        assert.match(String(res.headers['content-type']), /^application\/json/);
        assert.equal(res.headers['cache-control'], 'no-store');
      }
      expectError(await get(h, t, '/plants/9007199254740992'), 404, 'no plant with id 9007199254740992');
    });

    it("answers a plain 404 for another owner's id, and for a deleted one", async () => {
      const mine = await h.token(newOwner());
      const theirs = await h.token(newOwner());
      await createOk(h, theirs, 7, 'Theirs');
      const other = await get(h, mine, '/plants/7');
      const none = await get(h, mine, '/plants/8');
      expectError(other, 404, 'no plant with id 7');
      expectError(none, 404, 'no plant with id 8');
      assert.deepEqual(
        { ...other.headers, 'x-request-id': '', date: '' },
        { ...none.headers, 'x-request-id': '', date: '' },
      );
      await createOk(h, mine, 8, 'Mine');
      assert.equal((await deletePlant(h, mine, 8)).statusCode, 204);
      expectError(await get(h, mine, '/plants/8'), 404, 'no plant with id 8');
    });

    it('answers 400 for an id that is not an int64, and for a query parameter', async () => {
      const t = await h.token(newOwner());
      const message = 'id must be an integer between -9223372036854775808 and 9223372036854775807';
      for (const id of ['9223372036854775808', '-9223372036854775809', 'fern', '1.5', '1e3', '007', '+1', '%20'])
        expectError(await get(h, t, `/plants/${id}`), 400, message);
      expectError(await get(h, t, '/plants/1?x=1'), 400, 'unknown query parameter "x"');
      expectError(await get(h, t, `/plants/${'1'.repeat(201)}`), 414, 'the request URL is too long');
    });

    it('checks the token first: 401 without one, 403 without plants:read', async () => {
      const owner = newOwner();
      const write = await h.token(owner, { scopes: ['plants:write'] });
      expectError(await get(h, undefined, '/plants/1'), 401, /authentication required/);
      expectError(await get(h, undefined, '/plants/fern'), 401, /authentication required/);
      expectError(await get(h, write, '/plants/1'), 403, 'this token lacks the plants:read scope');
    });

    it('leaves GET /plants/events to the event stream', async () => {
      const t = await h.token(newOwner());
      // The stream's own checks answer, not the id's: the static path wins over /plants/{id}.
      expectError(await get(h, t, '/plants/events', { 'last-event-id': 'x' }), 400, /Last-Event-ID/);
    });
  });

  describe('GET /plants?tag=', () => {
    it("lists only the owner's plants with that tag, in insertion order, paged with the tag kept", async () => {
      const t = await h.token(newOwner());
      const other = await h.token(newOwner());
      const ferns: string[] = [];
      for (let i = 0; i < 11; i++) {
        const tag = i % 2 === 0 ? 'fern' : 'moss';
        await createOk(h, t, 100 - i, `p${i}`, tag);
        if (tag === 'fern') ferns.push(`p${i}`);
      }
      await createOk(h, t, 500, 'untagged');
      await createOk(h, t, 501, 'shouty', 'FERN');
      await createOk(h, other, 1, 'not mine', 'fern');
      const { plants, pageSizes } = await listAll(h, t, '/plants?tag=fern&limit=2');
      assert.deepEqual(
        plants.map((p) => p.name),
        ferns,
      );
      assert.deepEqual(pageSizes, [2, 2, 2]);
      const first = await getPage(h, t, '/plants?tag=fern&limit=2');
      assert.match(first.next!, /^\/plants\?limit=2&tag=fern&cursor=/);
      assert.deepEqual((await listAll(h, t, '/plants?tag=FERN')).plants, [{ name: 'shouty', tag: 'FERN' }]);
      assert.deepEqual((await listAll(h, t, '/plants?tag=nothing')).plants, []);
    });

    it('keeps a tag with reserved characters exact in the next link', async () => {
      const t = await h.token(newOwner());
      const tag = 'a&b=c d/é?\u{1F335}';
      for (let i = 0; i < 3; i++) await createOk(h, t, i, `x${i}`, tag);
      await createOk(h, t, 9, 'other', 'a');
      const { plants } = await listAll(h, t, `/plants?limit=1&tag=${encodeURIComponent(tag)}`);
      assert.deepEqual(
        plants.map((p) => p.name),
        ['x0', 'x1', 'x2'],
      );
    });

    it('refuses an empty, over-long or repeated tag, and a cursor of another list, with 400', async () => {
      const t = await h.token(newOwner());
      for (let i = 0; i < 3; i++) await createOk(h, t, i, `x${i}`, i === 1 ? 'b' : 'a');
      expectError(await get(h, t, '/plants?tag='), 400, TAG_MESSAGE);
      expectError(await get(h, t, `/plants?tag=${'t'.repeat(257)}`), 400, TAG_MESSAGE);
      expectError(await get(h, t, '/plants?tag=%00'), 400, TAG_MESSAGE);
      expectError(await get(h, t, '/plants?tag=a&tag=b'), 400, 'query parameter "tag" is given more than once');
      assert.equal((await get(h, t, `/plants?tag=${'t'.repeat(256)}`)).statusCode, 200);
      const byA = nextOf((await get(h, t, '/plants?tag=a&limit=1')).headers.link)!;
      const all = nextOf((await get(h, t, '/plants?limit=1')).headers.link)!;
      const cursorOf = (url: string) => new URL(url, 'http://x').searchParams.get('cursor')!;
      const bad = 'cursor must be a value taken from a Link rel="next" URL';
      expectError(await get(h, t, `/plants?limit=1&cursor=${cursorOf(byA)}`), 400, bad);
      expectError(await get(h, t, `/plants?limit=1&tag=b&cursor=${cursorOf(byA)}`), 400, bad);
      expectError(await get(h, t, `/plants?limit=1&tag=a&cursor=${cursorOf(all)}`), 400, bad);
      assert.deepEqual(JSON.parse((await get(h, t, byA)).body), [{ name: 'x2', tag: 'a' }]);
    });

    it('never answers a filtered request with an unfiltered page from the page cache, or the reverse', async () => {
      const t = await h.token(newOwner());
      await createOk(h, t, 1, 'one', 'a');
      await createOk(h, t, 2, 'two', 'b');
      for (let round = 0; round < 3; round++) {
        assert.deepEqual(JSON.parse((await get(h, t, '/plants')).body), [
          { name: 'one', tag: 'a' },
          { name: 'two', tag: 'b' },
        ]);
        assert.deepEqual(JSON.parse((await get(h, t, '/plants?tag=a')).body), [{ name: 'one', tag: 'a' }]);
        assert.deepEqual(JSON.parse((await get(h, t, '/plants?tag=b')).body), [{ name: 'two', tag: 'b' }]);
      }
      await createOk(h, t, 3, 'three', 'a');
      assert.deepEqual(
        JSON.parse((await get(h, t, '/plants?tag=a')).body).map((p: { name: string }) => p.name),
        ['one', 'three'],
      );
      assert.equal((await deletePlant(h, t, 1)).statusCode, 204);
      assert.deepEqual(JSON.parse((await get(h, t, '/plants?tag=a')).body), [{ name: 'three', tag: 'a' }]);
    });
  });

  describe('conditional GET', () => {
    it('a list page and a plant carry an ETag; If-None-Match with it answers 304 with no body', async () => {
      const t = await h.token(newOwner());
      await createOk(h, t, 1, 'one', 'a');
      await createOk(h, t, 2, 'two', 'a');
      for (const url of ['/plants', '/plants?limit=1', '/plants?tag=a', '/plants/1']) {
        const first = await get(h, t, url);
        assert.equal(first.statusCode, 200);
        const etag = String(first.headers.etag);
        assert.match(etag, /^"[A-Za-z0-9_-]{27}"$/, `${url}: a strong ETag`);
        assert.equal((await get(h, t, url)).headers.etag, etag, `${url}: the same answer, the same tag`);
        for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
          const again = await get(h, t, url, { 'if-none-match': inm });
          assert.equal(again.statusCode, 304, `${url} If-None-Match: ${inm}`);
          assert.equal(again.body, '');
          assert.equal(again.headers.etag, etag);
          assert.equal(again.headers['content-length'], undefined);
        }
        assert.equal((await get(h, t, url, { 'if-none-match': '"other"' })).statusCode, 200);
        // fetch() adds Cache-Control: no-cache to a request that sets If-None-Match itself: still a 304.
        const fromFetch = await get(h, t, url, { 'if-none-match': etag, 'cache-control': 'no-cache' });
        assert.equal(fromFetch.statusCode, 304);
        for (const bad of [etag.slice(1, -1), `${etag} junk`, `W/ ${etag}`, '']) {
          assert.equal((await get(h, t, url, { 'if-none-match': bad })).statusCode, 200, `If-None-Match: ${bad}`);
        }
        const head = await h.request({ method: 'HEAD', url, token: t, headers: { 'if-none-match': etag } });
        assert.equal(head.statusCode, 304);
      }
    });

    it('every write that changes an answer changes its ETag, and only then', async () => {
      const t = await h.token(newOwner());
      const other = await h.token(newOwner());
      await createOk(h, t, 1, 'one', 'a');
      await createOk(h, t, 2, 'two', 'b');
      const tags = async () =>
        Object.fromEntries(
          await Promise.all(
            ['/plants', '/plants?limit=1', '/plants?tag=a', '/plants?tag=b', '/plants/1', '/plants/2'].map(
              async (url) => [url, String((await get(h, t, url)).headers.etag)] as const,
            ),
          ),
        );
      const before = await tags();
      assert.equal(new Set(Object.values(before)).size, 6, 'different answers, different tags');
      // Another owner's writes, and a replay, change nothing of this owner's.
      await createOk(h, other, 1, 'one', 'a');
      await createOk(h, t, 1, 'one', 'a');
      assert.deepEqual(await tags(), before);
      // An append changes the whole list and the tag-b list, not the first page (it has a next page) or tag a.
      await createOk(h, t, 3, 'three', 'b');
      const appended = await tags();
      assert.notEqual(appended['/plants'], before['/plants']);
      assert.notEqual(appended['/plants?tag=b'], before['/plants?tag=b']);
      for (const url of ['/plants?limit=1', '/plants?tag=a', '/plants/1', '/plants/2'])
        assert.equal(appended[url], before[url], url);
      // A delete changes what held the plant.
      assert.equal((await deletePlant(h, t, 1)).statusCode, 204);
      const deleted = await tags();
      for (const url of ['/plants', '/plants?limit=1', '/plants?tag=a'])
        assert.notEqual(deleted[url], appended[url], url);
      assert.equal(deleted['/plants?tag=b'], appended['/plants?tag=b']);
      expectError(await get(h, t, '/plants/1', { 'if-none-match': before['/plants/1']! }), 404, /no plant/);
      // The same id again with other content: a new tag.
      await createOk(h, t, 1, 'uno', 'a');
      const recreated = await get(h, t, '/plants/1', { 'if-none-match': before['/plants/1']! });
      assert.equal(recreated.statusCode, 200);
      assert.notEqual(recreated.headers.etag, before['/plants/1']);
    });

    it('checks the token before answering 304', async () => {
      const owner = newOwner();
      const t = await h.token(owner);
      await createOk(h, t, 1, 'one');
      const etag = String((await get(h, t, '/plants/1')).headers.etag);
      const list = String((await get(h, t, '/plants')).headers.etag);
      const write = await h.token(owner, { scopes: ['plants:write'] });
      const stranger = await h.token(newOwner());
      for (const [url, inm] of [
        ['/plants/1', etag],
        ['/plants', list],
      ] as const) {
        expectError(await get(h, undefined, url, { 'if-none-match': inm }), 401, /authentication required/);
        expectError(await get(h, 'plnt_' + 'A'.repeat(43), url, { 'if-none-match': inm }), 401, /invalid bearer/);
        expectError(await get(h, write, url, { 'if-none-match': inm }), 403, /plants:read/);
      }
      expectError(await get(h, stranger, '/plants/1', { 'if-none-match': etag }), 404, 'no plant with id 1');
    });
  });
}

describeHttpLayer('HTTP reads: one plant, by tag, conditional', (fx) => {
  suite(useApp(fx));
});

// Without page reuse every page is read from the store, and its tag made anew: the same rules hold.
describeHttpLayer('HTTP reads without the list page cache', (fx) => {
  suite(useApp(fx, { listCacheBytes: 0 }));
});

describeHttpLayer('HTTP reads under CORS', (fx) => {
  const h = useApp(fx, { corsOrigin: 'https://app.example.com' });
  it('lets a page send If-None-Match and read the ETag', async () => {
    const preflight = await h.request({
      method: 'OPTIONS',
      url: '/plants/1',
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization, if-none-match',
      },
    });
    assert.equal(preflight.statusCode, 204);
    assert.match(String(preflight.headers['access-control-allow-headers']), /If-None-Match/i);
    const t = await h.token(newOwner());
    await createOk(h, t, 1, 'one');
    const res = await get(h, t, '/plants/1', { origin: 'https://app.example.com' });
    assert.match(String(res.headers['access-control-expose-headers']), /\bETag\b/);
    const notModified = await get(h, t, '/plants/1', {
      origin: 'https://app.example.com',
      'if-none-match': String(res.headers.etag),
    });
    assert.equal(notModified.statusCode, 304);
    assert.equal(notModified.headers['access-control-allow-origin'], 'https://app.example.com');
  });
});
