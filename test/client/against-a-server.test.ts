// plant-store/client against a real server on an ephemeral port: exact ids,
// paging through Link rel="next", PlantStoreError, nothing sent for an id
// that is not exact, and built files that need nothing but fetch.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { before, after, describe, it } from '../helpers/requirements.js';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { PlantStoreClient, PlantStoreError, type Plant } from '../../src/client/index.js';
import type { Store } from '../../src/store/store.js';
import { newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

/** The global fetch, recording every URL it is asked for, and the status of each answer. */
function recordingFetch(): { fetch: typeof fetch; urls: string[]; methods: string[]; statuses: number[] } {
  const urls: string[] = [];
  const methods: string[] = [];
  const statuses: number[] = [];
  return {
    urls,
    methods,
    statuses,
    fetch: async (input, init) => {
      urls.push(String(input));
      methods.push(init?.method ?? 'GET');
      const response = await fetch(input, init);
      statuses.push(response.status);
      return response;
    },
  };
}

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function rejectsWith(promise: Promise<unknown>, status: number, message: RegExp): Promise<PlantStoreError> {
  const error = await promise.then(
    () => assert.fail(`expected a PlantStoreError ${status}`),
    (e: unknown) => e,
  );
  assert.ok(error instanceof PlantStoreError, String(error));
  assert.equal(error.status, status);
  assert.equal(error.body.error, status);
  assert.match(error.body.message, message);
  assert.match(error.message, message);
  assert.equal(error.headers.get('content-type'), 'application/json; charset=utf-8');
  return error;
}

describeHttpLayer('plant-store/client', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  let baseUrl = '';

  before(async () => {
    store = await fx.open({ listDefaultLimit: 3, listMaxLimit: 4 });
    app = await buildApp(fx.config({ listDefaultLimit: 3, listMaxLimit: 4 }), { store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await app?.close();
  });

  async function newClient(
    opts: { fetch?: typeof fetch; scopes?: Array<'plants:read' | 'plants:write'>; revalidate?: number } = {},
  ) {
    const { token } = await issueToken(store.tokens, {
      owner: newOwner('client'),
      ...(opts.scopes ? { scopes: opts.scopes } : {}),
    });
    return new PlantStoreClient({
      baseUrl,
      token,
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
      ...(opts.revalidate !== undefined ? { revalidate: opts.revalidate } : {}),
    });
  }

  it('getPlant reads one plant by its exact int64 id; 404 for an id the caller does not have', async () => {
    const client = await newClient();
    await client.createPlant({ id: INT64_MAX, name: 'Max', tag: 'edge' });
    await client.createPlant({ id: 9007199254740993n, name: 'Past 2^53' });
    assert.deepEqual(await client.getPlant(INT64_MAX), { name: 'Max', tag: 'edge' });
    assert.deepEqual(await client.getPlant(9007199254740993n), { name: 'Past 2^53' });
    await rejectsWith(client.getPlant(9007199254740992n), 404, /no plant with id 9007199254740992/);
    await assert.rejects(client.getPlant(2 ** 53), RangeError);
    await rejectsWith((await newClient()).getPlant(INT64_MAX), 404, /no plant/);
  });

  it('listPlants, listPage and iteratePlants take a tag, and the next pages keep it', async () => {
    const client = await newClient();
    for (let i = 0; i < 9; i++) await client.createPlant({ id: i, name: `p${i}`, tag: i % 3 === 0 ? 'a&b' : 'c' });
    assert.deepEqual(await client.listPlants({ tag: 'a&b', limit: 2 }), [
      { name: 'p0', tag: 'a&b' },
      { name: 'p3', tag: 'a&b' },
    ]);
    const first = await client.listPage({ tag: 'a&b', limit: 2 });
    assert.deepEqual(await client.listPage({ tag: 'a&b', limit: 2, cursor: first.next! }), {
      plants: [{ name: 'p6', tag: 'a&b' }],
    });
    await rejectsWith(client.listPlants({ limit: 2, cursor: first.next! }), 400, /cursor/);
    assert.deepEqual(
      (await all(client.iteratePlants({ tag: 'c', pageSize: 2 }))).map((p) => p.name),
      ['p1', 'p2', 'p4', 'p5', 'p7', 'p8'],
    );
  });

  it('reads again with If-None-Match: an unchanged answer is a 304, a changed one is read anew', async () => {
    const recorder = recordingFetch();
    const client = await newClient({ fetch: recorder.fetch });
    await client.createPlant({ id: 1, name: 'one', tag: 't' });
    await client.createPlant({ id: 2, name: 'two', tag: 't' });
    recorder.statuses.length = 0;
    const first = await client.getPlant(1);
    const page = await client.listPage({ tag: 't', limit: 1 });
    // The caller may change what it got: what is kept is not.
    first.name = 'changed by the caller';
    page.plants.length = 0;
    assert.deepEqual(await client.getPlant(1), { name: 'one', tag: 't' });
    assert.deepEqual(await client.listPage({ tag: 't', limit: 1 }), {
      plants: [{ name: 'one', tag: 't' }],
      next: page.next,
    });
    assert.deepEqual(recorder.statuses, [200, 200, 304, 304]);
    await client.deletePlant(1);
    await client.createPlant({ id: 1, name: 'uno', tag: 't' });
    recorder.statuses.length = 0;
    assert.deepEqual(await client.getPlant(1), { name: 'uno', tag: 't' });
    assert.deepEqual(await client.listPlants({ tag: 't', limit: 1 }), [{ name: 'two', tag: 't' }]);
    assert.deepEqual(recorder.statuses.slice(0, 2), [200, 200]);
    // Without revalidation, nothing is kept and every read is a 200.
    const plain = recordingFetch();
    const unkept = await newClient({ fetch: plain.fetch, revalidate: 0 });
    await unkept.createPlant({ id: 1, name: 'x' });
    await unkept.getPlant(1);
    await unkept.getPlant(1);
    assert.deepEqual(plain.statuses, [200, 200, 200]);
  });

  it('creates, lists and deletes plants with int64 ids as bigint, exactly', async () => {
    const client = await newClient();
    const created: Plant = await client.createPlant({ id: INT64_MAX, name: 'Monstera', tag: 'tropical' });
    assert.deepEqual(created, { name: 'Monstera', tag: 'tropical' });
    assert.deepEqual(await client.createPlant({ id: INT64_MIN, name: 'Min' }), { name: 'Min' });
    // 2^53+1 and 2^53 are two plants: a number would have made them one.
    await client.createPlant({ id: 2n ** 53n + 1n, name: 'odd' });
    await client.createPlant({ id: 2n ** 53n, name: 'even' });
    assert.deepEqual(await client.listPlants({ limit: 10 }), [
      { name: 'Monstera', tag: 'tropical' },
      { name: 'Min' },
      { name: 'odd' },
      { name: 'even' },
    ]);
    await client.deletePlant(2n ** 53n + 1n);
    await client.deletePlant(INT64_MAX);
    assert.deepEqual(await client.listPlants({ limit: 10 }), [{ name: 'Min' }, { name: 'even' }]);
  });

  it('takes safe-integer numbers as ids too', async () => {
    const client = await newClient();
    await client.createPlant({ id: 42, name: 'Fern' });
    await client.createPlant({ id: -(2 ** 53 - 1), name: 'Low' });
    await client.createPlant({ id: 42n, name: 'Fern' }); // the same id: a safe retry
    await client.deletePlant(42);
    await client.deletePlant(BigInt(-(2 ** 53 - 1)));
    assert.deepEqual(await client.listPlants(), []);
  });

  it('throws RangeError, sending nothing, for an id that is not exact or not an int64', async () => {
    const recorder = recordingFetch();
    const client = await newClient({ fetch: recorder.fetch });
    // Number('9007199254740993') is what a caller's literal 9007199254740993 becomes: 2^53.
    for (const id of [2 ** 53, Number('9007199254740993'), -(2 ** 53), 1.5, Number.NaN, Infinity, 1e300]) {
      await assert.rejects(client.createPlant({ id, name: 'x' }), RangeError, String(id));
      await assert.rejects(client.deletePlant(id), RangeError, String(id));
    }
    for (const id of [INT64_MAX + 1n, INT64_MIN - 1n]) {
      await assert.rejects(client.createPlant({ id, name: 'x' }), RangeError, String(id));
      await assert.rejects(client.deletePlant(id), RangeError, String(id));
    }
    assert.deepEqual(recorder.urls, []);
  });

  it('iteratePlants follows Link rel="next" to the end, a page at a time', async () => {
    const recorder = recordingFetch();
    const client = await newClient({ fetch: recorder.fetch });
    const names = Array.from({ length: 7 }, (_, i) => `p${i}`);
    for (const [i, name] of names.entries()) await client.createPlant({ id: BigInt(i) * 10n ** 17n, name });
    recorder.urls.length = 0;
    assert.deepEqual(
      (await all(client.iteratePlants({ pageSize: 3 }))).map((p) => p.name),
      names,
    );
    assert.equal(recorder.urls.length, 3, recorder.urls.join('\n'));
    assert.equal(recorder.urls[0], `${baseUrl}/plants?limit=3`);
    for (const url of recorder.urls.slice(1)) assert.match(url, /\/plants\?limit=3&cursor=/);
    // Without a page size, the server's default page (3 here) is used.
    assert.deepEqual(
      (await all(client.iteratePlants())).map((p) => p.name),
      names,
    );
  });

  it('listPlants returns one page; listPage also gives the cursor of the next', async () => {
    const client = await newClient();
    for (let i = 0; i < 5; i++) await client.createPlant({ id: i, name: `p${i}` });
    assert.deepEqual(await client.listPlants({ limit: 2 }), [{ name: 'p0' }, { name: 'p1' }]);
    assert.equal((await client.listPlants()).length, 3, 'the default page size');
    assert.equal((await client.listPlants({ limit: 100 })).length, 4, 'clamped to the server maximum');
    const first = await client.listPage({ limit: 2 });
    assert.ok(first.next);
    assert.deepEqual(await client.listPlants({ limit: 2, cursor: first.next }), [{ name: 'p2' }, { name: 'p3' }]);
    const last = await client.listPage({ limit: 10, cursor: first.next });
    assert.deepEqual(last, { plants: [{ name: 'p2' }, { name: 'p3' }, { name: 'p4' }] });
  });

  it('throws PlantStoreError with the status, the {error, message} body and the headers', async () => {
    const client = await newClient();
    await client.createPlant({ id: 1, name: 'Fern' });
    await rejectsWith(client.createPlant({ id: 1, name: 'Other' }), 409, /\bid 1\b/);
    await rejectsWith(client.deletePlant(2), 404, /\b2\b/);
    await rejectsWith(client.listPlants({ limit: 0 }), 400, /\blimit\b/);
    await rejectsWith(client.listPlants({ cursor: 'nope' }), 400, /\bcursor\b/);
    // The server, not the client, judges the other fields.
    await rejectsWith(client.createPlant({ id: 3, name: '' }), 400, /\bname\b/);
    await rejectsWith(client.createPlant({ id: 3, name: 'x', color: 'red' } as never), 400, /\bcolor\b/);
    const unauthorized = await rejectsWith(
      new PlantStoreClient({ baseUrl, token: 'plnt_' + 'A'.repeat(43) }).listPlants(),
      401,
      /token/,
    );
    assert.match(String(unauthorized.headers.get('www-authenticate')), /error="invalid_token"/);
    const readOnly = await newClient({ scopes: ['plants:read'] });
    const forbidden = await rejectsWith(readOnly.deletePlant(1), 403, /plants:write/);
    assert.match(String(forbidden.headers.get('www-authenticate')), /insufficient_scope/);
  });

  it('keeps a path prefix of baseUrl, with or without a trailing slash', async () => {
    const recorder = recordingFetch();
    const { token } = await issueToken(store.tokens, { owner: newOwner('prefix') });
    for (const base of [`${baseUrl}/api`, `${baseUrl}/api/`]) {
      const client = new PlantStoreClient({ baseUrl: base, token, fetch: recorder.fetch });
      await rejectsWith(client.listPlants(), 404, /\/api\/plants/);
    }
    assert.deepEqual(recorder.urls, [`${baseUrl}/api/plants`, `${baseUrl}/api/plants`]);
  });
});

describe('the built client package', () => {
  const dir = fileURLToPath(new URL('../../../packages/client/dist/', import.meta.url));

  it('imports nothing from node: and nothing from outside its own files', () => {
    const files = readdirSync(dir).filter((f) => f.endsWith('.js'));
    assert.ok(files.includes('index.js') && files.includes('client.js'), files.join(', '));
    for (const file of files) {
      const source = readFileSync(`${dir}${file}`, 'utf8');
      const specifiers = [...source.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)].map((m) => m[1]!);
      for (const specifier of specifiers) {
        assert.match(specifier, /^\.\/[\w.-]+\.js$/, `${file} imports ${specifier}`);
      }
      assert.doesNotMatch(source, /\brequire\s*\(|\bprocess\.|\bBuffer\b/, `${file} uses Node globals`);
    }
  });

  it('ships type declarations', () => {
    const declarations = readdirSync(dir).filter((f) => f.endsWith('.d.ts'));
    assert.ok(declarations.includes('index.d.ts'), declarations.join(', '));
  });
});
