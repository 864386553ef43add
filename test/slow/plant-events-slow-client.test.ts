// A client that stops reading its live stream is closed with a last
// `overflow` event once the stream's buffer is full, instead of the server
// buffering without end; one that takes nothing for --events-slow-ms is
// closed by the same rule, whether it follows live events or catches up on a
// backlog. Slow: the loopback socket's own buffers (megabytes) must fill
// first, which takes thousands of events.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { eventStreamsClosedSlow, eventStreamsOpen } from '../../src/metrics/metrics.js';
import type { Store } from '../../src/store/store.js';
import { it } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

const metric = async (m: typeof eventStreamsClosedSlow | typeof eventStreamsOpen) =>
  (await m.get()).values[0]?.value ?? 0;

/**
 * Writes `n` plants of `owner` with 256-character names and tags (about 650
 * bytes of event each, so 10 000 of them are more than the 4 MiB the kernel
 * buffers for a loopback connection), 250 at a time.
 */
async function fill(store: Store, owner: string, n: number, from = 0n): Promise<void> {
  const name = 'x'.repeat(256);
  const tag = 't'.repeat(256);
  for (let id = from; id < from + BigInt(n);) {
    const batch = [];
    for (let i = 0; i < 250 && id < from + BigInt(n); i++)
      batch.push(store.plants.create(owner, { id: ++id, name, tag }));
    await Promise.all(batch);
  }
}

const openConnections = (app: { server: Server }) =>
  new Promise<number>((resolve, reject) => app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

/** Resolves with the milliseconds until `check` holds, failing after `ms`. */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > ms) assert.fail(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return performance.now() - started;
}

/**
 * A raw connection that asks for the stream and, once the response head has
 * come, stops reading until `resume()`; `received()` is all it has read.
 */
async function stalledReader(port: number, token: string): Promise<{ socket: net.Socket; received: () => string }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  let received = '';
  let stopped = false;
  socket.on('data', (d: Buffer) => {
    received += d.toString('latin1');
    if (!stopped && received.includes('\r\n\r\n')) {
      stopped = true;
      socket.pause();
    }
  });
  socket.write(`GET /plants/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
  while (!received.includes('\r\n\r\n')) await new Promise((r) => setTimeout(r, 10));
  assert.match(received, /^HTTP\/1.1 200/);
  return { socket, received: () => received };
}

/** Reading again within the grace, the client gets what was buffered, then the overflow event and the end. */
async function readsOverflowAtTheEnd(socket: net.Socket, received: () => string): Promise<void> {
  const ended = new Promise((resolve) => socket.once('close', resolve));
  socket.resume();
  await ended;
  assert.match(
    received(),
    /event: overflow\ndata: \{"type":"overflow","message":"[^"]*Last-Event-ID[^"]*"\}\n\n\r\n0\r\n\r\n$/,
  );
}

describeOnStore('sqlite', 'a live stream whose client stops reading', (fx) => {
  it(
    'is closed after --events-slow-ms while catching up on a backlog it never reads',
    { timeout: 120_000 },
    async () => {
      const store = await fx.open({ durability: 'normal' });
      await fill(store, 'backlog', 10_000);
      const app = await buildApp(fx.config({ eventsSlowMs: 500, durability: 'normal' }), { store });
      await app.listen({ host: '127.0.0.1', port: 0 });
      try {
        const { port } = app.server.address() as AddressInfo;
        const { token } = await issueToken(store.tokens, { owner: 'backlog' });
        const closedBefore = await metric(eventStreamsClosedSlow);
        const openBefore = await metric(eventStreamsOpen);
        // Never reads a byte, the head included.
        const socket = net.connect({ port, host: '127.0.0.1' });
        socket.pause();
        socket.on('error', () => {});
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(
          `GET /plants/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nLast-Event-ID: 0\r\n\r\n`,
        );
        await until(async () => (await metric(eventStreamsOpen)) > openBefore, 5000, 'the stream opened');
        const opened = performance.now();
        await until(async () => (await metric(eventStreamsClosedSlow)) > closedBefore, 10_000, 'closed as slow');
        const closedAfter = performance.now() - opened;
        assert.equal(await metric(eventStreamsOpen), openBefore, 'the stream no longer counts');
        // The connection itself is cut once the grace for the last event has passed.
        await until(async () => (await openConnections(app)) === 0, 10_000, 'connection cut');
        assert.ok(closedAfter >= 500, `closed ${Math.round(closedAfter)} ms after it opened`);
        socket.destroy();
      } finally {
        await app.close();
      }
    },
  );

  it(
    'is closed by the same rule while following live events, below the buffer limit, and is told why',
    { timeout: 120_000 },
    async () => {
      const store = await fx.open({ durability: 'normal' });
      const config = { eventsSlowMs: 500, eventsBufferBytes: 64 * 1024 * 1024, eventsPollMs: 20, durability: 'normal' };
      const app = await buildApp(fx.config(config as never), { store });
      await app.listen({ host: '127.0.0.1', port: 0 });
      try {
        const { port } = app.server.address() as AddressInfo;
        const { token } = await issueToken(store.tokens, { owner: 'live-stalled' });
        const { socket, received } = await stalledReader(port, token);
        const closedBefore = await metric(eventStreamsClosedSlow);
        await fill(store, 'live-stalled', 10_000);
        await until(async () => (await metric(eventStreamsClosedSlow)) > closedBefore, 10_000, 'closed as slow');
        await readsOverflowAtTheEnd(socket, received);
      } finally {
        await app.close();
      }
    },
  );

  it('is closed with an overflow event, and the server does not buffer without end', { timeout: 120_000 }, async () => {
    const store = await fx.open({ durability: 'normal' });
    const app = await buildApp(fx.config({ eventsBufferBytes: 4096, durability: 'normal' }), { store });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as AddressInfo;
      const { token } = await issueToken(store.tokens, { owner: 'slow' });
      const { socket, received } = await stalledReader(port, token);
      const closedBefore = (await eventStreamsClosedSlow.get()).values[0]?.value ?? 0;
      const name = 'x'.repeat(256);
      let id = 0n;
      let closed = false;
      for (let round = 0; round < 400 && !closed; round++) {
        await Promise.all(Array.from({ length: 250 }, () => store.plants.create('slow', { id: ++id, name })));
        // Live events go out at the next poll, woken by writes through HTTP; these went to the store directly.
        await new Promise((r) => setTimeout(r, 150));
        closed = ((await eventStreamsClosedSlow.get()).values[0]?.value ?? 0) > closedBefore;
      }
      assert.ok(closed, `not closed after ${id} events`);
      await readsOverflowAtTheEnd(socket, received);
    } finally {
      await app.close();
    }
  });
});
