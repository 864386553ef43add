// A client that stops reading its live stream is closed with a last
// `overflow` event once the stream's buffer is full, instead of the server
// buffering without end. Slow: the loopback socket's own buffers (megabytes)
// must fill first, which takes thousands of events.
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { eventStreamsClosedSlow } from '../../src/metrics/metrics.js';
import { it } from '../helpers/requirements.js';
import { describeOnStore } from '../helpers/stores.js';

describeOnStore('sqlite', 'a live stream whose client stops reading', (fx) => {
  it('is closed with an overflow event, and the server does not buffer without end', { timeout: 120_000 }, async () => {
    const store = await fx.open({ durability: 'normal' });
    const app = await buildApp(fx.config({ eventsBufferBytes: 4096, durability: 'normal' }), { store });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const { port } = app.server.address() as AddressInfo;
      const { token } = await issueToken(store.tokens, { owner: 'slow' });
      const socket = net.connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      let received = '';
      socket.on('data', (d: Buffer) => {
        received += d.toString('latin1');
        // Stop reading once the head has come.
        if (received.includes('\r\n\r\n')) socket.pause();
      });
      socket.write(`GET /plants/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`);
      while (!received.includes('\r\n\r\n')) await new Promise((r) => setTimeout(r, 10));
      assert.match(received, /^HTTP\/1.1 200/);
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
      // Reading again, the client gets what was buffered, then the last event and the end.
      const ended = new Promise((resolve) => socket.once('end', resolve));
      socket.resume();
      await ended;
      assert.match(
        received,
        /event: overflow\ndata: \{"type":"overflow","message":"[^"]*Last-Event-ID[^"]*"\}\n\n\r\n0\r\n\r\n$/,
      );
    } finally {
      await app.close();
    }
  });
});
