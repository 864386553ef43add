// What a raw HTTP client can do with the request framing: Expect:
// 100-continue invites the body only for a valid token, two Host headers are
// refused, and the admin listener gets the main port's connection cap and
// timeouts. A listening app on an ephemeral port, driven with raw sockets.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../src/app/app.js';
import { startAdmin } from '../src/app/admin.js';
import { issueToken } from '../src/auth/tokens.js';
import type { Store } from '../src/store/store.js';
import { exchange } from './helpers/raw-socket.js';
import { describeHttpLayer } from './helpers/stores.js';
import { after, before, describe, it } from './helpers/requirements.js';

const portOf = (app: FastifyInstance) => (app.server.address() as AddressInfo).port;

describeHttpLayer('request framing on a listening server', (fx) => {
  let store: Store;
  let app: FastifyInstance;
  let port: number;
  let token: string;
  before(async () => {
    store = await fx.open();
    app = await buildApp(fx.config(), { store });
    await app.listen({ host: '127.0.0.1', port: 0 });
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
