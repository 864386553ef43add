// What a raw HTTP client can do with the request framing: Expect:
// 100-continue invites the body only for a valid token, other expectations,
// transfer codings but chunked, two Host or Content-Type headers, a body on
// DELETE, CONNECT and unknown or repeated query parameters are refused with a
// JSON error, and the admin listener gets the main port's connection cap and
// timeouts. A listening app on an ephemeral port, driven with raw sockets.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { startAdmin } from '../../src/cli/admin-listener.js';
import { issueToken } from '../../src/auth/tokens.js';
import type { Store } from '../../src/store/store.js';
import { listenApp } from '../helpers/app.js';
import { exchange } from '../helpers/raw-socket.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { after, before, describe, it } from '../helpers/requirements.js';

const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;

describeHttpLayer('request framing on a listening server', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  let port: number;
  let token: string;
  before(async () => {
    ({ app, store } = await listenApp(fx));
    port = portOf(app);
    token = (await issueToken(store.tokens, { owner: 'framing' })).token;
  });
  after(async () => {
    await app?.close();
  });

  /** Sends a head with Expect: 100-continue, then the body only after 300 ms; returns all the server sent. */
  const expectContinue = (authorization: string) => {
    const body = '{"id":1,"name":"fern"}';
    return exchange(
      port,
      (socket) => {
        socket.write(
          `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: ${authorization}\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`,
        );
        setTimeout(() => socket.writable && socket.write(body), 300);
      },
      5000,
    );
  };

  it('does not invite the body of a request whose token is not valid', { timeout: 10_000 }, async () => {
    for (const bad of ['Bearer plnt_' + 'A'.repeat(43), 'Bearer not-a-token', 'Basic dXNlcjpwYXNz']) {
      const { data } = await expectContinue(bad);
      assert.doesNotMatch(data, /100 Continue/, `${bad}: ${data}`);
      assert.match(data, /^HTTP\/1\.1 401 /, data);
    }
  });

  it('invites the body of a request with a valid token, then stores it', { timeout: 10_000 }, async () => {
    const { data } = await expectContinue(`Bearer ${token}`);
    assert.match(data, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, data);
    assert.match(data, /\{"name":"fern"\}$/);
  });

  it(
    'refuses a request with two Host headers with the JSON 400, and closes the connection',
    { timeout: 10_000 },
    async () => {
      for (const second of ['Host: evil.example', 'host: x', 'HOST: x']) {
        const { data } = await exchange(
          port,
          (socket) =>
            socket.write(`GET /plants HTTP/1.1\r\nHost: x\r\n${second}\r\nAuthorization: Bearer ${token}\r\n\r\n`),
          5000,
        );
        assert.match(data, /^HTTP\/1\.1 400 /, data);
        assert.match(data, /connection: close/i);
        assert.match(data, /\{"error":400,"message":"more than one Host header"\}$/);
      }
      // One Host is fine.
      const { data } = await exchange(
        port,
        (socket) =>
          socket.write(
            `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
          ),
        5000,
      );
      assert.match(data, /^HTTP\/1\.1 200 /, data);
    },
  );

  /** One raw request with Connection: close; the status and the JSON body of the answer, and its head. */
  const raw = async (head: string, body = '') => {
    const { data } = await exchange(port, (socket) => socket.write(`${head}Connection: close\r\n\r\n${body}`), 5000);
    const split = data.indexOf('\r\n\r\n');
    const text = data.slice(split + 4);
    return { status: Number(data.slice(9, 12)), head: data.slice(0, split), body: text ? JSON.parse(text) : undefined };
  };
  const auth = () => `Authorization: Bearer ${token}\r\n`;
  const listed = async () =>
    (await (
      await fetch(`http://127.0.0.1:${port}/plants?limit=1000`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { name: string }[];

  it(
    'answers an expectation other than 100-continue with a JSON 417, after the token check',
    { timeout: 10_000 },
    async () => {
      const head = (a: string) =>
        `POST /plants HTTP/1.1\r\nHost: x\r\n${a}Content-Type: application/json\r\nContent-Length: 24\r\nExpect: 200-ok\r\n`;
      assert.equal((await raw(head(''), '{"id":71,"name":"nope"}')).status, 401);
      const r = await raw(head(auth()), '{"id":71,"name":"nope"}');
      assert.deepEqual(
        [r.status, r.body],
        [417, { error: 417, message: 'Expect: 200-ok cannot be met: only 100-continue is understood' }],
      );
      assert.match(r.head, /x-content-type-options: nosniff/);
      assert.equal(
        (await listed()).some((p) => p.name === 'nope'),
        false,
      );
    },
  );

  it('refuses a transfer coding other than chunked with a JSON 501, storing nothing', { timeout: 10_000 }, async () => {
    const body = '{"id":72,"name":"gz"}';
    const chunked = `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    const r = await raw(
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n`,
      chunked,
    );
    assert.equal(r.status, 501);
    assert.equal(
      r.body.message,
      'Transfer-Encoding "gzip, chunked" is not supported: send chunked or a Content-Length',
    );
    const plain = await raw(
      `POST /plants HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n`,
      chunked.replace('72', '73'),
    );
    assert.equal(plain.status, 200, 'chunked alone is fine');
    assert.deepEqual(
      (await listed()).map((p) => p.name).filter((n) => n === 'gz'),
      ['gz'],
      'one stored, by the chunked request',
    );
  });

  it(
    'answers a Transfer-Encoding not ending in chunked once: 401 without a token, else 400, then closes',
    { timeout: 20_000 },
    async () => {
      /** Every status line the server sent on one connection, until it closed it. */
      const statuses = async (head: string, body = '') => {
        const { data } = await exchange(port, (socket) => socket.write(`${head}\r\n${body}`), 5000);
        return { lines: data.match(/HTTP\/1\.1 \d{3}/g) ?? [], data };
      };
      const gzip = (a: string, path = '/plants') =>
        `POST ${path} HTTP/1.1\r\nHost: x\r\n${a}Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n`;
      const fresh = async () =>
        `Authorization: Bearer ${(await issueToken(store.tokens, { owner: 'framing' })).token}\r\n`;
      // A cached token is checked before Node's parser reports the framing,
      // a new one (looked up in the store) after: both orders, with and without a body.
      assert.equal((await raw(`GET /plants HTTP/1.1\r\nHost: x\r\n${auth()}`)).status, 200);
      const cases: [string, string, string, number][] = [
        ['no token', gzip('') + 'Connection: close\r\n', '', 401],
        ['no token, a body', gzip(''), '{"id":76,"name":"unframed"}', 401],
        ['cached token', gzip(auth()) + 'Connection: close\r\n', '', 400],
        ['cached token, a body', gzip(auth()), '{"id":76,"name":"unframed"}', 400],
        ['new token', gzip(await fresh()) + 'Connection: close\r\n', '', 400],
        ['new token, a body', gzip(await fresh()), '{"id":76,"name":"unframed"}', 400],
        ['cached token, unknown path', gzip(auth(), '/nowhere'), '', 404],
        ['new token, unknown path', gzip(await fresh(), '/nowhere'), '', 404],
      ];
      for (const [what, head, body, status] of cases) {
        const { lines, data } = await statuses(head, body);
        assert.deepEqual(lines, [`HTTP/1.1 ${status}`], `${what}: ${data}`);
      }
      const r = await raw(gzip(auth()));
      assert.deepEqual(r.body, {
        error: 400,
        message:
          'Transfer-Encoding "gzip" does not end in chunked, so the body\'s length cannot be known: send chunked or a Content-Length',
      });
      assert.equal(
        (await listed()).some((p) => p.name === 'unframed'),
        false,
      );
    },
  );

  it('refuses two Content-Type headers, whichever comes first', { timeout: 10_000 }, async () => {
    const body = '{"id":74,"name":"typed"}';
    for (const types of [
      'application/json\r\nContent-Type: text/plain',
      'text/plain\r\nContent-Type: application/json',
    ]) {
      const r = await raw(
        `POST /plants HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: ${types}\r\nContent-Length: ${body.length}\r\n`,
        body,
      );
      assert.deepEqual([r.status, r.body], [400, { error: 400, message: 'more than one Content-Type header' }]);
    }
    assert.equal(
      (await listed()).some((p) => p.name === 'typed'),
      false,
    );
  });

  it('refuses a DELETE with a body, deleting nothing', { timeout: 10_000 }, async () => {
    assert.equal(
      (
        await raw(
          `POST /plants HTTP/1.1\r\nHost: x\r\n${auth()}Content-Type: application/json\r\nContent-Length: 23\r\n`,
          '{"id":75,"name":"kept"}',
        )
      ).status,
      200,
    );
    for (const framing of ['Content-Type: application/json\r\nContent-Length: 2\r\n', 'Content-Length: 1\r\n']) {
      const r = await raw(
        `DELETE /plants/75 HTTP/1.1\r\nHost: x\r\n${auth()}${framing}`,
        framing.includes('2') ? '{}' : 'x',
      );
      assert.deepEqual([r.status, r.body], [400, { error: 400, message: 'DELETE takes no request body' }]);
    }
    assert.equal(
      (await listed()).some((p) => p.name === 'kept'),
      true,
    );
    assert.equal((await raw(`DELETE /plants/75 HTTP/1.1\r\nHost: x\r\n${auth()}`)).status, 204);
  });

  it('answers CONNECT with a JSON 405 instead of closing the connection', { timeout: 10_000 }, async () => {
    const r = await raw('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n');
    assert.deepEqual(
      [r.status, r.body],
      [405, { error: 405, message: 'CONNECT is not allowed: this server is not a proxy' }],
    );
    assert.match(r.head, /content-type: application\/json; charset=utf-8/);
  });

  it(
    'answers a method Node does not know with a JSON 501, and noise with a JSON 400',
    { timeout: 10_000 },
    async () => {
      for (const method of ['FROB', 'get', 'BREW']) {
        const r = await raw(`${method} /plants HTTP/1.1\r\nHost: x\r\n${auth()}`);
        assert.deepEqual(
          [r.status, r.body],
          [501, { error: 501, message: `the method ${method} is not implemented by this server` }],
        );
        assert.match(r.head, /content-type: application\/json; charset=utf-8/);
      }
      // A TLS handshake sent to the plain HTTP port, and a method with a character no token has.
      for (const noise of ['\x16\x03\x01\x02\x00\x01\x00\xfc\x03\x03', 'G@T /plants HTTP/1.1\r\nHost: x\r\n']) {
        const r = await raw(noise);
        assert.deepEqual([r.status, r.body], [400, { error: 400, message: 'malformed HTTP request' }]);
      }
    },
  );

  it('refuses unknown and repeated query parameters on every route', { timeout: 10_000 }, async () => {
    const cases: [string, string, string][] = [
      ['DELETE', '/plants/1?x=1', 'unknown query parameter "x"'],
      ['GET', '/plants/events?x=1', 'unknown query parameter "x"'],
      ['GET', '/plants?limit=1&limit=2', 'query parameter "limit" is given more than once'],
      ['GET', '/plants?cursor=a&cursor=b', 'query parameter "cursor" is given more than once'],
    ];
    for (const [method, url, message] of cases) {
      const r = await raw(`${method} ${url} HTTP/1.1\r\nHost: x\r\n${auth()}Accept: text/event-stream\r\n`);
      assert.deepEqual([r.status, r.body], [400, { error: 400, message }], `${method} ${url}`);
    }
  });
});

describe('the admin listener', () => {
  let admin: FastifyInstance;
  before(async () => {
    admin = await startAdmin('127.0.0.1', 0, {
      logger: pino({ level: 'silent' }),
      metrics: async () => '',
      ready: async () => {},
      limits: { headersTimeoutMs: 500, requestTimeoutMs: 1000, keepAliveTimeoutMs: 300, maxConnections: 2 },
    });
  });
  after(async () => {
    await admin?.close();
  });

  it('closes a connection that sends nothing within the head timeout', { timeout: 10_000 }, async () => {
    const { closedAfterMs } = await exchange(portOf(admin), () => {}, 4000);
    assert.ok(closedAfterMs < 2000, `closed after ${closedAfterMs.toFixed(0)} ms`);
  });

  it('closes an idle keep-alive connection after its answer', { timeout: 10_000 }, async () => {
    const { data, closedAfterMs } = await exchange(
      portOf(admin),
      (socket) => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
      4000,
    );
    assert.match(data, /^HTTP\/1\.1 200 /);
    assert.ok(closedAfterMs < 2500, `closed after ${closedAfterMs.toFixed(0)} ms`);
  });

  it('closes connections past the cap at once', { timeout: 10_000 }, async () => {
    const port = portOf(admin);
    const held = [1, 2].map(() => exchange(port, () => {}, 4000));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const third = await exchange(port, () => {}, 4000);
    assert.ok(third.closedAfterMs < 300, `the third connection stayed ${third.closedAfterMs.toFixed(0)} ms`);
    assert.equal(third.data, '');
    await Promise.all(held);
  });
});
