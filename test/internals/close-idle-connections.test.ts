// Closing idle keep-alive connections while shutting down leaves alone a
// connection whose answer has ended but is still being sent (a client that
// reads slowly): Node's own closeIdleConnections destroys it, and the client
// gets its answer cut short, also from server.close(), which calls it. Once
// sent, the connection is idle and closed.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { guardConnections } from '../../src/app/connection-limits.js';

const LIMITS = { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, maxConnections: 0 };
// Far more than the socket buffers hold, so the answer stays unsent until the client reads.
const BODY = Buffer.alloc(32 * 1024 * 1024, 'x');

/** `closeIdle` is called while the answer waits; `guard: false` leaves the server as Node makes it. */
async function slowReader(
  closeIdle: (server: http.Server, guarded: ReturnType<typeof guardConnections> | undefined) => void,
  { guard = true } = {},
) {
  let finished = false;
  const server = http.createServer((_req, res) => {
    res.on('finish', () => (finished = true));
    res.end(BODY);
  });
  const guarded = guard ? guardConnections(server, LIMITS, pino({ enabled: false })) : undefined;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  socket.pause();
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  await sleep(200); // the answer is ended and waits in the socket for a client that does not read
  closeIdle(server, guarded);
  let received = 0;
  socket.on('data', (chunk: Buffer) => (received += chunk.length));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.on('error', () => {});
  socket.resume();
  const headEnd = 200;
  while (received < BODY.length + headEnd && !socket.destroyed) {
    await Promise.race([sleep(20), closed]);
    if (finished) break;
  }
  await sleep(50);
  socket.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  return { finished, received };
}

describe('closing idle connections while shutting down', () => {
  it('leaves a connection whose answer is still being sent, which then finishes', async () => {
    const { finished, received } = await slowReader((_server, guarded) => guarded!.closeIdle());
    assert.equal(finished, true, 'the server saw its answer finish');
    assert.ok(received > BODY.length, `the client got the whole answer (${received} bytes)`);
  });

  it('leaves it when the server is closed, too', async () => {
    const { finished, received } = await slowReader((server) => server.close());
    assert.equal(finished, true, 'the server saw its answer finish');
    assert.ok(received > BODY.length, `the client got the whole answer (${received} bytes)`);
  });

  it("is needed: Node's closeIdleConnections, and server.close() which calls it, destroy that connection", async () => {
    for (const close of [(s: http.Server) => s.closeIdleConnections(), (s: http.Server) => s.close()]) {
      const { received } = await slowReader(close, { guard: false });
      assert.ok(received < BODY.length, `the client got part of it (${received} bytes)`);
    }
  });

  it('closes a keep-alive connection waiting for its next request', async () => {
    const server = http.createServer((_req, res) => res.end('ok'));
    const guarded = guardConnections(server, LIMITS, pino({ enabled: false }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    const answered = new Promise((resolve) => socket.once('data', resolve));
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await answered;
    await sleep(20);
    const closed = new Promise((resolve) => socket.once('close', resolve));
    guarded.closeIdle();
    await closed;
    await new Promise((resolve) => server.close(resolve));
  });
});
