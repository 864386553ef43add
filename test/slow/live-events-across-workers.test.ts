// serve --workers 2 as real processes: an event written through either
// worker reaches every live stream, whichever worker holds it, in the order
// the writes were made; and with the poll at a minute, within a second, told
// by the other worker: through the signal folder beside the SQLite file, by
// PostgreSQL's NOTIFY, and behind a transaction pooler (no LISTEN there)
// over the cluster's IPC.
import assert from 'node:assert/strict';
import http from 'node:http';
import { Readable } from 'node:stream';
import { readEventStream, type ServerSentEvent } from '../../packages/client/src/event-stream.js';
import { it } from '../helpers/requirements.js';
import { issueToken } from '../../src/auth/tokens.js';
import { httpRequest, serveArgs, startServer, stopGracefully, useProcessCleanup } from '../helpers/server.js';
import { describeEachStore } from '../helpers/stores.js';
import { eventually } from '../helpers/eventually.js';
import { query } from '../helpers/pg.js';
import { ORDINAL_BITS } from '../../src/store/postgres/event-log.postgres.js';

const STREAMS = 6;
const PER_WORKER = STREAMS / 2;

/** How many events a PostgreSQL reader can read now. */
const readableEvents = async (db: string) =>
  (
    await query<{ n: number }>(
      db,
      `SELECT count(*)::int AS n FROM plant_events WHERE id < (pg_snapshot_xmin(pg_current_snapshot())::text::int8 << ${ORDINAL_BITS})`,
    )
  )[0]!.n;

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

describeEachStore(
  'live events with serve --workers 2',
  (fx) => {
    useProcessCleanup();

    it('sends every write, through either worker, to every stream on both workers within 1 s, in order', async () => {
      // Made in this process: two CLI processes fewer to start.
      const store = await fx.open();
      const { token } = await issueToken(store.tokens, { owner: 'everywhere' });
      // The per-owner cap is per process: six streams open at three each means both workers hold three.
      const server = await startServer(
        serveArgs(
          fx.db,
          ...(fx.kind === 'pgbouncer' ? ['--pg-pooler', 'transaction'] : []),
          '--workers',
          '2',
          '--access-log',
          '--events-max-streams-per-owner',
          String(PER_WORKER),
          // A poll a minute apart: what arrives within a second was told by the worker that wrote.
          '--events-poll-ms',
          '60000',
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
        const reachesEveryStream = async (what: string) => {
          // On PostgreSQL a committed event can be held back by other writing transactions in the cluster (see EventLog).
          if (fx.kind !== 'sqlite')
            await eventually(async () => (await readableEvents(fx.db)) >= writes.length, 10_000);
          const deadline = performance.now() + 1000;
          while (streams.some((s) => s.events.length < writes.length) && performance.now() < deadline)
            await new Promise((resolve) => setTimeout(resolve, 5));
          for (const [i, s] of streams.entries())
            assert.equal(s.events.length, writes.length, `stream ${i} got the event of ${what} within 1 s`);
        };
        for (let id = 1; id <= 6; id++) {
          const res = await httpRequest(`${server.url}/plants`, {
            method: 'POST',
            token,
            json: { id, name: `w${id}` },
          });
          assert.equal(res.status, 200, res.body);
          writes.push(['plant.created', id]);
          await reachesEveryStream(`create ${id}`);
        }
        for (const id of [2, 5]) {
          assert.equal((await httpRequest(`${server.url}/plants/${id}`, { method: 'DELETE', token })).status, 204);
          writes.push(['plant.deleted', id]);
          await reachesEveryStream(`delete ${id}`);
        }
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
  },
  ['sqlite', 'postgres', 'pgbouncer'],
);
