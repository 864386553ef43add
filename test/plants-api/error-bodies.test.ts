// Every rejected request: status, the {"error": status, "message"} body with a
// message naming what is wrong, a JSON content type, and nothing changed.
import assert from 'node:assert/strict';
import { before, describe, it } from '../helpers/requirements.js';
import { useApp, type AppHarness } from '../helpers/app.js';
import {
  createRaw,
  deletePlant,
  expectError,
  getPage,
  listAll,
  newOwner,
  type PlantBody,
} from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

const ID_MESSAGE = 'id must be an integer between -9223372036854775808 and 9223372036854775807';

/** An owner with a few plants, and a check that their plants are exactly as seeded. */
function useSeededOwner(h: AppHarness) {
  const o = { token: '', baseline: [] as PlantBody[] };
  before(async () => {
    o.token = await h.token(newOwner('err'));
    for (const raw of [
      '{"id":1,"name":"one","tag":"t"}',
      '{"id":2,"name":"two"}',
      '{"id":9007199254740993,"name":"big"}',
    ]) {
      assert.equal((await createRaw(h, o.token, raw)).statusCode, 200);
    }
    o.baseline = (await listAll(h, o.token)).plants;
    assert.equal(o.baseline.length, 3);
  });
  return {
    get token() {
      return o.token;
    },
    async assertUnchanged(): Promise<void> {
      assert.deepEqual((await listAll(h, o.token)).plants, o.baseline, 'a rejected request changed the plants');
    },
  };
}

const name257 = 'n'.repeat(257);
const tag257 = 't'.repeat(257);

/** [what, raw body, message pattern] — each must be a 400 that stores nothing. */
const BAD_BODIES: Array<[string, string, RegExp | string]> = [
  ['name missing', '{"id":100}', /\bname\b/],
  ['name a number', '{"id":100,"name":5}', /\bname\b/],
  ['name null', '{"id":100,"name":null}', /\bname\b/],
  ['name a boolean', '{"id":100,"name":true}', /\bname\b/],
  ['name an object', '{"id":100,"name":{"a":"b"}}', /\bname\b/],
  ['name an array', '{"id":100,"name":["x"]}', /\bname\b/],
  ['name empty', '{"id":100,"name":""}', /\bname\b/],
  ['name of 257 characters', `{"id":100,"name":"${name257}"}`, /\bname\b/],
  ['tag a number', '{"id":100,"name":"x","tag":5}', /\btag\b/],
  ['tag null', '{"id":100,"name":"x","tag":null}', /\btag\b/],
  ['tag a boolean', '{"id":100,"name":"x","tag":false}', /\btag\b/],
  ['tag an object', '{"id":100,"name":"x","tag":{}}', /\btag\b/],
  ['tag of 257 characters', `{"id":100,"name":"x","tag":"${tag257}"}`, /\btag\b/],
  ['id missing', '{"name":"x"}', /\bid\b/],
  ['id a string that is not decimal digits', '{"id":"one hundred","name":"x"}', ID_MESSAGE],
  ['id a string with a fraction', '{"id":"1.0","name":"one","tag":"t"}', ID_MESSAGE],
  ['id fractional (1.5)', '{"id":1.5,"name":"x"}', ID_MESSAGE],
  ['id written 1.0', '{"id":1.0,"name":"x"}', ID_MESSAGE],
  ['id written 1e3', '{"id":1e3,"name":"x"}', ID_MESSAGE],
  ['id written 1E3', '{"id":1E3,"name":"x"}', ID_MESSAGE],
  ['id null', '{"id":null,"name":"x"}', ID_MESSAGE],
  ['id a boolean', '{"id":true,"name":"x"}', ID_MESSAGE],
  ['id an array', '{"id":[1],"name":"x"}', ID_MESSAGE],
  ['id 2^63 (just above int64)', '{"id":9223372036854775808,"name":"x"}', ID_MESSAGE],
  ['id -2^63-1 (just below int64)', '{"id":-9223372036854775809,"name":"x"}', ID_MESSAGE],
  ['id 2^64+1 (wraps to an existing id)', '{"id":18446744073709551617,"name":"one","tag":"t"}', ID_MESSAGE],
  ['id with 30 digits', '{"id":123456789012345678901234567890,"name":"x"}', ID_MESSAGE],
  ['an unknown property', '{"id":100,"name":"x","color":"red"}', /\bcolor\b/],
  ['a property differing only in case', '{"id":100,"name":"x","Tag":"y"}', /\bTag\b/],
  ['a __proto__ property', '{"id":100,"name":"x","__proto__":{"tag":"y"}}', /__proto__/],
  ['malformed JSON (truncated)', '{"id":100,"name":', /JSON/],
  ['malformed JSON (unquoted keys)', '{id:100,name:"x"}', /JSON/],
  ['malformed JSON (single quotes)', "{'id':100,'name':'x'}", /JSON/],
  ['malformed JSON (trailing comma)', '{"id":100,"name":"x",}', /JSON/],
  ['malformed JSON (trailing garbage)', '{"id":100,"name":"x"} {}', /JSON/],
  ['malformed JSON (NaN)', '{"id":NaN,"name":"x"}', /JSON/],
  ['a body that is an array of arrays', '[[{"id":100,"name":"x"}]]', /^\/0: must be a JSON object/],
  ['a body that is an empty array', '[]', /empty array/],
  ['a batch with one invalid element', '[{"id":100,"name":"x"},{"id":101,"name":""}]', /^\/1\/name: name must be/],
  ['a body that is a string', '"x"', /object/],
  ['a body that is a number', '100', /object/],
  ['a body that is null', 'null', /object/],
  ['a body that is true', 'true', /object/],
  ['an empty body', '', /empty|body/],
  ['a body of whitespace only', ' \n\t ', /empty|body/],
];

describeHttpLayer('HTTP errors', (fx) => {
  const h = useApp(fx);
  const owner = useSeededOwner(h);

  async function rejectCreate(
    raw: string,
    status: number,
    message: RegExp | string,
    headers: Record<string, string> = {},
  ) {
    const res = await createRaw(h, owner.token, raw, headers);
    const text = expectError(res, status, message);
    await owner.assertUnchanged();
    return text;
  }

  describe('400 on POST /plants, nothing stored', () => {
    for (const [what, raw, message] of BAD_BODIES) {
      it(what, async () => {
        await rejectCreate(raw, 400, message);
      });
    }

    it('several problems are all named', async () => {
      const text = await rejectCreate('{"name":5,"tag":7}', 400, /\bid\b/);
      assert.match(text, /\bname\b/);
      assert.match(text, /\btag\b/);
    });

    it('no body and no Content-Type', async () => {
      const res = await h.request({ method: 'POST', url: '/plants', token: owner.token });
      expectError(res, 400, /body|object/);
      await owner.assertUnchanged();
    });
  });

  describe('400 on GET /plants', () => {
    const badLists: Array<[string, RegExp]> = [
      ['limit=0', /\blimit\b/],
      ['limit=-1', /\blimit\b/],
      ['limit=abc', /\blimit\b/],
      ['limit=1.5', /\blimit\b/],
      ['limit=1e3', /\blimit\b/],
      ['limit=2147483648', /\blimit\b/],
      ['limit=99999999999999999999999', /\blimit\b/],
      ['limit=', /\blimit\b/],
      ['limit=1&limit=2', /\blimit\b/],
      ['foo=1', /\bfoo\b/],
      ['LIMIT=5', /\bLIMIT\b/],
      ['limit=2&offset=1', /\boffset\b/],
      ['cursor=zzz', /\bcursor\b/],
      ['cursor=', /\bcursor\b/],
      [`cursor=${'A'.repeat(300)}`, /\bcursor\b/],
      ['cursor=%00', /\bcursor\b/],
    ];
    for (const [query, message] of badLists) {
      it(`?${query.length > 40 ? `${query.slice(0, 40)}...` : query}`, async () => {
        expectError(await h.request({ method: 'GET', url: `/plants?${query}`, token: owner.token }), 400, message);
      });
    }

    it('a cursor that was altered, or given twice, is rejected', async () => {
      const { next } = await getPage(h, owner.token, '/plants?limit=1');
      assert.ok(next, 'a first page of one plant has a next link');
      const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
      for (const query of [
        `cursor=${cursor}A`,
        `cursor=${cursor}=`,
        `cursor=${cursor.slice(0, -1)}`,
        `cursor=${cursor}&cursor=${cursor}`,
      ]) {
        expectError(
          await h.request({ method: 'GET', url: `/plants?limit=1&${query}`, token: owner.token }),
          400,
          /\bcursor\b/,
        );
      }
    });
  });

  describe('400 on DELETE /plants/{id}, nothing deleted', () => {
    const badIds = [
      'abc',
      '1.5',
      '1.0',
      '1e3',
      '0x1',
      '9223372036854775808',
      '-9223372036854775809',
      '18446744073709551617', // 2^64+1: wraps to 1 if truncated
      '18446744073709551618', // 2^64+2: wraps to 2
      '99999999999999999999999',
      '%20',
      'null',
    ];
    for (const id of badIds) {
      it(`/plants/${id}`, async () => {
        expectError(await deletePlant(h, owner.token, id), 400, ID_MESSAGE);
        await owner.assertUnchanged();
      });
    }
  });

  describe('404', () => {
    it('DELETE of an id the caller does not have', async () => {
      expectError(await deletePlant(h, owner.token, 424242), 404, /\b424242\b/);
      await owner.assertUnchanged();
    });

    it("DELETE of another owner's id, and the plant survives", async () => {
      const other = await h.token(newOwner('other'));
      expectError(await deletePlant(h, other, 1), 404, /\b1\b/);
      await owner.assertUnchanged();
    });

    for (const [method, url] of [
      ['GET', '/nope'],
      ['GET', '/plant'],
      ['POST', '/plant'],
      ['GET', '/plants/1/leaves'],
      ['DELETE', '/plants/1/2'],
      ['GET', '/PLANTS'],
    ] as const) {
      it(`unknown path: ${method} ${url}`, async () => {
        const res = await h.request({ method, url, token: owner.token });
        expectError(res, 404, new RegExp(url.replace(/[/.]/g, '\\$&')));
      });
    }
  });

  describe('405 with Allow', () => {
    const cases: Array<[method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, allowed: string[]]> = [
      ['PUT', '/plants', ['GET', 'POST']],
      ['PATCH', '/plants', ['GET', 'POST']],
      ['DELETE', '/plants', ['GET', 'POST']],
      ['POST', '/plants/1', ['GET', 'DELETE']],
      ['PUT', '/plants/1', ['GET', 'DELETE']],
      ['PATCH', '/plants/1', ['GET', 'DELETE']],
      ['POST', '/healthz', ['GET']],
      ['DELETE', '/readyz', ['GET']],
      ['PUT', '/openapi.json', ['GET']],
    ];
    for (const [method, url, allowed] of cases) {
      it(`${method} ${url}`, async () => {
        const res = await h.request({ method, url, token: owner.token });
        expectError(res, 405, new RegExp(`\\b${method}\\b`));
        const allow = String(res.headers.allow ?? '').split(/,\s*/);
        for (const m of allowed) assert.ok(allow.includes(m), `Allow "${String(res.headers.allow)}" lacks ${m}`);
        assert.ok(!allow.includes(method), `Allow "${String(res.headers.allow)}" lists ${method}`);
        await owner.assertUnchanged();
      });
    }
  });

  describe('413 over the default 1 MiB limit', () => {
    it('a valid plant one byte over the limit is refused, a body just under it is read', async () => {
      const limit = 1024 * 1024;
      const over = sized('{"id":100,"name":"x"}', limit + 1);
      await rejectCreate(over, 413, /1048576/);
      // Just within the limit the body is read (and fails validation on name length, not on size).
      await rejectCreate(sized('{"id":100,"name":"x"}', limit, 'name'), 400, /\bname\b/);
    });
  });

  describe('415 on POST /plants', () => {
    for (const type of [
      'text/plain',
      'application/x-www-form-urlencoded',
      'application/xml',
      'multipart/form-data; boundary=x',
      'application/jsonx',
    ]) {
      it(`Content-Type: ${type}`, async () => {
        await rejectCreate('{"id":100,"name":"x"}', 415, /Content-Type/, { 'content-type': type });
      });
    }

    it('a body with no Content-Type', async () => {
      const res = await h.request({
        method: 'POST',
        url: '/plants',
        token: owner.token,
        payload: '{"id":100,"name":"x"}',
      });
      expectError(res, 415, /Content-Type/);
      await owner.assertUnchanged();
    });

    it('a compressed body (Content-Encoding other than identity)', async () => {
      for (const encoding of ['gzip', 'br', 'x-unknown']) {
        const text = await rejectCreate('{"id":100,"name":"x"}', 415, /Content-Encoding/, {
          'content-type': 'application/json',
          'content-encoding': encoding,
        });
        assert.match(text, new RegExp(`"${encoding}"`), 'the message names the encoding');
      }
      const identity = await createRaw(h, owner.token, '{"id":100,"name":"x"}', { 'content-encoding': 'Identity' });
      assert.equal(identity.statusCode, 200, identity.body);
      assert.equal((await deletePlant(h, owner.token, 100)).statusCode, 204);
      await owner.assertUnchanged();
    });
  });

  describe('414', () => {
    it('a path segment longer than the router takes, answered before any lookup', async () => {
      const res = await deletePlant(h, owner.token, '1'.repeat(201));
      expectError(res, 414, /too long/);
      await owner.assertUnchanged();
    });
  });
});

/**
 * A JSON object of exactly `bytes` bytes: either padded with spaces after
 * `json`, or (with `grow`) with that string property lengthened.
 */
function sized(json: string, bytes: number, grow?: string): string {
  if (grow === undefined) return json.replace(/}$/, `${' '.repeat(bytes - json.length)}}`);
  const m = new RegExp(`"${grow}":"([^"]*)"`).exec(json)!;
  const longer = m[1]! + 'x'.repeat(bytes - json.length);
  return json.replace(m[0], `"${grow}":"${longer}"`);
}

describeHttpLayer('HTTP errors with bodyLimit 256', (fx) => {
  const h = useApp(fx, { bodyLimit: 256 });
  const owner = useSeededOwner(h);

  it('a body of exactly 256 bytes is accepted', async () => {
    const body = sized('{"id":200,"name":"fits"}', 256);
    assert.equal(Buffer.byteLength(body), 256);
    const res = await createRaw(h, owner.token, body);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual((await listAll(h, owner.token)).plants.at(-1), { name: 'fits' });
    assert.equal((await deletePlant(h, owner.token, 200)).statusCode, 204);
  });

  it('257 bytes is 413 naming the configured limit, and nothing is stored', async () => {
    const body = sized('{"id":201,"name":"too big"}', 257);
    expectError(await createRaw(h, owner.token, body), 413, /\b256\b/);
    await owner.assertUnchanged();
  });

  it('the limit counts bytes, not characters', async () => {
    // 100 three-byte characters: 100 characters, over 300 bytes.
    const body = `{"id":202,"name":"${'\u20AC'.repeat(100)}"}`;
    assert.ok(body.length < 256 && Buffer.byteLength(body) > 256);
    expectError(await createRaw(h, owner.token, body), 413, /\b256\b/);
    await owner.assertUnchanged();
  });
});
