// serve --workers 2 as real processes: an event written through either
// worker reaches every live stream, whichever worker holds it, in the order
// the writes were made.
import assert from 'node:assert/strict';
import http from 'node:http';
import { Readable } from 'node:stream';
import { readEventStream, type ServerSentEvent } from '../../packages/client/src/event-stream.js';
import { it } from '../helpers/requirements.js';
import {
  cliToken,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  useProcessCleanup,
} from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

const STREAMS = 6;
const PER_WORKER = STREAMS / 2;

/** An open stream and the events read from it so far. */
interface Stream {
  controller: AbortController;
  events: ServerSentEvent[];
  reading: Promise<void>;
}

/** Opens a stream on a connection of its own; undefined when its worker already holds PER_WORKER (429). */
async function open(url: string, token: string): Promise<Stream | undefined> {
  const controller = new AbortController();
  const response = await new Promise<http.IncomingMessage>((resolve, reject) =>
    http
      .get(
        `${url}/plants/events`,
        {
          agent: false,
          headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
          signal: controller.signal,
        },
        resolve,
      )
      .on('error', reject),
  );
  if (response.statusCode === 429) {
    response.resume();
    return undefined;
  }
  assert.equal(response.statusCode, 200);
  const events: ServerSentEvent[] = [];
  const body = Readable.toWeb(response) as ReadableStream<Uint8Array>;
  const reading = (async () => {
    try {
      for await (const e of readEventStream(body)) if (e.event !== undefined) events.push(e);
    } catch {
      // aborted at the end
    }
  })();
  return { controller, events, reading };
}

describeOnStore('sqlite', 'live events with serve --workers 2', (fx) => {
  useProcessCleanup();

  it('sends every write, through either worker, to every stream on both workers, in order', async () => {
    await migrateWithCli(fx.db);
    const token = await cliToken(fx.db, 'everywhere');
    // The per-owner cap is per process: six streams open at three each means both workers hold three.
    const server = await startServer(
      serveArgs(
        fx.db,
        '--workers',
        '2',
        '--access-log',
        '--events-max-streams-per-owner',
        String(PER_WORKER),
        '--events-poll-ms',
        '20',
      ),
      { listeners: 2 },
    );
    const streams: Stream[] = [];
    try {
      for (let tries = 0; streams.length < STREAMS && tries < 4 * STREAMS; tries++) {
        const stream = await open(server.url, token);
        if (stream) streams.push(stream);
      }
      assert.equal(streams.length, STREAMS, `${STREAMS} streams open, ${PER_WORKER} on each worker`);

      // Each write on a connection of its own: the cluster hands them to the workers in turn.
      const writes: [string, number][] = [];
      for (let id = 1; id <= 6; id++) {
        const res = await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id, name: `w${id}` } });
        assert.equal(res.status, 200, res.body);
        writes.push(['plant.created', id]);
      }
      for (const id of [2, 5]) {
        assert.equal((await httpRequest(`${server.url}/plants/${id}`, { method: 'DELETE', token })).status, 204);
        writes.push(['plant.deleted', id]);
      }
      const deadline = performance.now() + 5000;
      while (streams.some((s) => s.events.length < writes.length) && performance.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      const first = streams[0]!.events.map((e) => e.id);
      for (const [i, s] of streams.entries()) {
        assert.deepEqual(
          s.events.map((e) => [e.event, (JSON.parse(e.data) as { data: { id: number } }).data.id]),
          writes,
          `stream ${i}`,
        );
        assert.deepEqual(
          s.events.map((e) => e.id),
          first,
          `stream ${i} has the same ids`,
        );
      }
      const ids = first.map((id) => BigInt(id!));
      assert.ok(
        ids.every((id, i) => i === 0 || id > ids[i - 1]!),
        `ids increase: ${ids.join(', ')}`,
      );
    } finally {
      for (const s of streams) s.controller.abort();
      await Promise.all(streams.map((s) => s.reading));
      await stopGracefully(server);
    }
    // Worker logs reach stdout asynchronously: read them once all have exited.
    const writers = new Set(
      server
        .logLines()
        .filter((l) => l.msg === 'request completed' && l.method !== 'GET')
        .map((l) => l.pid),
    );
    assert.equal(writers.size, 2, 'writes went through both workers');
  });
});
