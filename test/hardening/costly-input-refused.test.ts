// Input that costs the server more than it costs the sender is refused before
// the expensive work; ids and limits are written one way only; and a request
// id shaped like a secret is never echoed or logged.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useApp } from '../helpers/app.js';
import { createRaw, deletePlant, expectError, jsonBody, newOwner } from '../helpers/plants-http.js';
import { httpRequest, serveArgs, stopGracefully, useProcessCleanup } from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { describe, it } from '../helpers/requirements.js';

const ID_MESSAGE = 'id must be an integer between -9223372036854775808 and 9223372036854775807';
const TOO_MANY = /more than 100 JSON values/;
const MIB = 1024 * 1024;

describeHttpLayer('cheap refusals and strict numbers', (fx) => {
  const h = useApp(fx);

  // Parsing and validating each body below held the event loop for 0.1 to
  // 0.5 s. Their messages come only from the scan that runs before the
  // parser (app/json-body.ts), so getting them shows the parser never ran;
  // how long the refusal takes is reported, not asserted (speed belongs in the bench).
  const COSTLY: Array<[string, () => string, RegExp]> = [
    [
      'an id of a million digits',
      () => `{"id":${'9'.repeat(MIB - 30)},"name":"x"}`,
      /^a number in the request body is too long$/,
    ],
    [
      '90 000 unknown keys',
      () => `{${Array.from({ length: 90_000 }, (_, i) => `"k${i}":1`).join(',')}}`.slice(0, MIB - 10) + '}',
      TOO_MANY,
    ],
    [
      'a word of a million letters outside quotes',
      () => `{"id":1,"name":"x",${'Z'.repeat(MIB - 30)}}`,
      /^request body is not valid JSON: it holds a word outside quotes longer than any number, true, false or null$/,
    ],
    [
      'true written twenty times over',
      () => 'true'.repeat(20),
      /^request body is not valid JSON: it holds a word outside quotes longer than any number, true, false or null$/,
    ],
    ['an id array of half a million elements', () => `{"id":[${'1,'.repeat(MIB / 2 - 20)}1],"name":"x"}`, TOO_MANY],
    ['100 000 nested arrays', () => `{"id":${'['.repeat(100_000)}${']'.repeat(100_000)},"name":"x"}`, TOO_MANY],
  ];
  for (const [what, body, message] of COSTLY) {
    it(`refuses ${what} with a 400 before parsing it, storing nothing`, async (t) => {
      const token = await h.token(newOwner('cost'));
      const started = performance.now();
      const res = await createRaw(h, token, body());
      t.diagnostic(`refused in ${(performance.now() - started).toFixed(1)} ms`);
      assert.match(expectError(res, 400, /./), message);
      const list = await h.request({ method: 'GET', url: '/plants', token });
      assert.deepEqual(jsonBody(list), []);
    });
  }

  it('counts values outside strings only: commas, colons and quotes in a name are fine', async () => {
    const token = await h.token(newOwner('cost'));
    const name = 'a,b:c[d{e\\"'.repeat(20);
    const res = await createRaw(h, token, JSON.stringify({ id: 1, name }));
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(jsonBody(res), { name });
  });

  it('says "unknown property" up to 100 values and "more than 100" past them', async () => {
    const token = await h.token(newOwner('cost'));
    const extra = (n: number) => Array.from({ length: n }, (_, i) => `,"k${i}":1`).join('');
    // {"id":1,"name":"x" holds 3 values ('{', ',', two ':'), each extra key two more.
    expectError(await createRaw(h, token, `{"id":1,"name":"x"${extra(48)}}`), 400, /unknown property "k0"/);
    expectError(await createRaw(h, token, `{"id":1,"name":"x"${extra(49)}}`), 400, TOO_MANY);
  });

  it('refuses number literals longer than an int64 before converting them', async () => {
    const token = await h.token(newOwner('num'));
    expectError(await createRaw(h, token, `{"id":${'1'.repeat(21)},"name":"x"}`), 400, ID_MESSAGE);
    expectError(await createRaw(h, token, `{"id":-${'1'.repeat(63)},"name":"x"}`), 400, ID_MESSAGE);
    expectError(await createRaw(h, token, `{"id":${'1'.repeat(65)},"name":"x"}`), 400, /too long/);
    expectError(await createRaw(h, token, `${'1'.repeat(100)}`), 400, /too long/);
    const min = await createRaw(h, token, '{"id":-9223372036854775808,"name":"min"}');
    assert.equal(min.statusCode, 200, min.body);
  });

  describe('ids and limits are decimal without leading zeros, as JSON writes them', () => {
    for (const path of ['/plants/0900', '/plants/00', '/plants/-01', '/plants/+5', '/plants/0x10']) {
      it(`DELETE ${path} is 400`, async () => {
        const token = await h.token(newOwner('zero'));
        await createRaw(h, token, '{"id":900,"name":"x"}');
        expectError(await h.request({ method: 'DELETE', url: path, token }), 400, ID_MESSAGE);
        assert.equal((await deletePlant(h, token, 900)).statusCode, 204, 'plant 900 was still there');
      });
    }

    it('DELETE /plants/0 and /plants/-0 are ids (404 when absent)', async () => {
      const token = await h.token(newOwner('zero'));
      expectError(await deletePlant(h, token, '0'), 404, /no plant/);
      expectError(await deletePlant(h, token, '-0'), 404, /no plant/);
    });

    for (const limit of ['01', '001', '-01', '+1']) {
      it(`GET /plants?limit=${limit} is 400`, async () => {
        const token = await h.token(newOwner('zero'));
        expectError(await h.request({ method: 'GET', url: `/plants?limit=${limit}`, token }), 400, /\blimit\b/);
      });
    }

    it('"id": 0900 in a body is 400 too (not JSON), and so is "id": "0900"', async () => {
      const token = await h.token(newOwner('zero'));
      expectError(await createRaw(h, token, '{"id":0900,"name":"x"}'), 400, /JSON/);
      expectError(await createRaw(h, token, '{"id":"0900","name":"x"}'), 400, ID_MESSAGE);
      expectError(await createRaw(h, token, '{"id":"-00","name":"x"}'), 400, ID_MESSAGE);
      const plain = await createRaw(h, token, '{"id":"900","name":"x"}');
      assert.equal(plain.statusCode, 200, plain.body);
    });
  });
});

const TOKEN_LIKE = `plnt_${randomBytes(32).toString('base64url')}`;
const JWT_LIKE =
  'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.' +
  randomBytes(32)
    .toString('base64url')
    .replace(/[^A-Za-z0-9]/g, 'x');
const SECRET_LIKE = [
  ['a Plant Store token', TOKEN_LIKE],
  ['a token in upper case', TOKEN_LIKE.toUpperCase()],
  ['a token after a prefix', `req-${TOKEN_LIKE}`],
  ['a JWT', JWT_LIKE],
  ['a random 40-character secret', 'aB3' + randomBytes(30).toString('base64url').slice(0, 37)],
] as const;
const KEPT = ['req-123', '0f8fad5b-d9cb-469f-a165-70867728950e', '4BF92F3577B34DA6A3CE929D0E0E4736', 'x'.repeat(128)];

describe('X-Request-Id', () => {
  useProcessCleanup();

  describeHttpLayer('from a client, by default', (fx) => {
    const h = useApp(fx);
    it('is neither kept nor echoed: the server gives its own', async () => {
      for (const value of KEPT) {
        const res = await h.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': value } });
        const id = String(res.headers['x-request-id']);
        assert.notEqual(id, value);
        assert.match(id, /^[A-Za-z0-9_-]{8}-[0-9a-z]+$/);
      }
    });
  });

  describeHttpLayer('shaped like a secret, from a trusted proxy, is replaced, not echoed', (fx) => {
    const h = useApp(fx, { trustRequestId: true });
    for (const [what, value] of SECRET_LIKE) {
      it(`${what} gets a generated id instead`, async () => {
        const res = await h.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': value } });
        assert.equal(res.statusCode, 200);
        const id = String(res.headers['x-request-id']);
        assert.notEqual(id, value);
        assert.ok(!id.includes(value.slice(5, 25)), id);
      });
    }
    it('request ids that look like UUIDs, hex trace ids and plain words are kept', async () => {
      for (const value of KEPT) {
        const res = await h.request({ method: 'GET', url: '/healthz', headers: { 'x-request-id': value } });
        assert.equal(res.headers['x-request-id'], value);
      }
    });
  });

  it('shaped like a secret never reaches the log; from a client not trusted, no id does', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plant-store-reqid-'));
    // With the access log on, every request id is written: the one place a secret-shaped id could leak.
    const server = await serveInProcess(serveArgs(join(dir, 'plants.db'), '--access-log', '--trust-request-id'));
    const untrusting = await serveInProcess(serveArgs(join(dir, 'other.db'), '--access-log'));
    try {
      const untrusted = await httpRequest(`${untrusting.url}/plants`, { headers: { 'x-request-id': 'not-kept-id' } });
      assert.notEqual(untrusted.headers['x-request-id'], 'not-kept-id');
      await stopGracefully(untrusting);
      assert.ok(!untrusting.stdout.includes('not-kept-id'), `an untrusted id was logged:\n${untrusting.stdout}`);
      assert.ok(untrusting.stdout.includes(`"reqId":"${String(untrusted.headers['x-request-id'])}"`));
      for (const [, value] of SECRET_LIKE) {
        const res = await httpRequest(`${server.url}/plants`, { headers: { 'x-request-id': value } });
        assert.equal(res.status, 401);
        assert.notEqual(res.headers['x-request-id'], value);
      }
      const kept = await httpRequest(`${server.url}/plants`, { headers: { 'x-request-id': 'kept-id' } });
      assert.equal(kept.headers['x-request-id'], 'kept-id');
      await stopGracefully(server);
      assert.ok(server.stdout.includes('"reqId":"kept-id"'), `the kept id is logged:\n${server.stdout}`);
      for (const [what, value] of SECRET_LIKE) {
        assert.ok(!server.stdout.includes(value.slice(0, 30)), `${what} was logged:\n${server.stdout}`);
      }
    } finally {
      await stopGracefully(untrusting);
      await stopGracefully(server);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
