// GET /plants/events against real servers on ephemeral ports, on each store:
// the wire format, order, resume with Last-Event-ID, reset (after pruning
// too), owners kept apart, an event held back behind a PostgreSQL
// transaction still open, two servers on one database, caps, keep-alives,
// timeouts, shutdown, and the client's watchPlants reconnecting across a
// restart.
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { buildApp } from '../../src/app/app.js';
import { issueToken } from '../../src/auth/tokens.js';
import { readEventStream, type ServerSentEvent } from '../../packages/client/src/event-stream.js';
import { PlantStoreClient, type PlantChange } from '../../src/client/index.js';
import type { Scope, Store } from '../../src/store/store.js';
import { eventually } from '../helpers/eventually.js';
import { closeEventWriter, openEventWriter } from '../helpers/open-event-writer.js';
import { query as pgQuery } from '../helpers/pg.js';
import { after, before, describe, it } from '../helpers/requirements.js';
import { listenApp, type ListeningApp } from '../helpers/app.js';
import { describeEachStore } from '../helpers/stores.js';

const T = { timeout: 20_000 };
/** The servers' LISTEN connections to this test's database. */
const EVENTS_BACKENDS = "application_name = 'plant-store-events' AND datname = current_database()";
/** How many there are, and how many have got as far as LISTEN (their last statement is one of the signal's own). */
const LISTENING = `SELECT count(*)::int AS all, count(*) FILTER (WHERE state = 'idle'
    AND query IN ('LISTEN plant_store_events', 'NOTIFY plant_store_events', 'SELECT 1'))::int AS listening
  FROM pg_stat_activity WHERE ${EVENTS_BACKENDS}`;
const INT64_MAX = 9223372036854775807n;

type Server = ListeningApp;
const serve = listenApp;

/** An open stream, read event by event (comments too, as `:` events, when `comments`). */
class Stream {
  readonly #events: AsyncGenerator<ServerSentEvent>;
  /** A read `within` gave up waiting for; the next read takes its result. */
  #pending: Promise<IteratorResult<ServerSentEvent>> | undefined;
  constructor(
    readonly response: Response,
    readonly controller: AbortController,
  ) {
    this.#events = readEventStream(response.body!);
  }

  static async open(base: string, token: string, lastEventId?: string): Promise<Stream> {
    const controller = new AbortController();
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const response = await fetch(`${base}/plants/events`, { headers, signal: controller.signal });
    assert.equal(response.status, 200, await (response.ok ? '' : response.text()));
    return new Stream(response, controller);
  }

  /** The next `n` events, failing after `ms`. */
  async take(n: number, ms = 5000): Promise<ServerSentEvent[]> {
    const out: ServerSentEvent[] = [];
    const timer = setTimeout(() => this.controller.abort(), ms);
    try {
      while (out.length < n) {
        const next = await (this.#pending ?? this.#events.next());
        this.#pending = undefined;
        if (next.done) break;
        out.push(next.value);
      }
    } catch {
      // aborted: fewer than n
    } finally {
      clearTimeout(timer);
    }
    return out;
  }

  /** The next event if one arrives within `ms`, else undefined; the stream stays open either way. */
  async within(ms: number): Promise<ServerSentEvent | undefined> {
    this.#pending ??= this.#events.next();
    const next = await Promise.race([this.#pending, delay(ms).then(() => undefined)]);
    if (next === undefined) return undefined;
    this.#pending = undefined;
    return next.done ? undefined : next.value;
  }

  /** True when no event arrives within `ms`; the stream is closed after that. */
  async quiet(ms: number): Promise<boolean> {
    return (await this.take(1, ms)).length === 0;
  }

  close(): void {
    this.controller.abort();
  }
}

async function send(base: string, token: string, method: string, path: string, body?: string): Promise<number> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
  await response.arrayBuffer();
  return response.status;
}

/**
 * Resolves once `n` events of the owner can be read. On PostgreSQL a write
 * answered can still be held back by any other writing transaction in the
 * cluster (other suites' too) for as long as that one runs.
 */
async function readable(store: Store, owner: string, n: number): Promise<void> {
  const deadline = performance.now() + 10_000;
  while ((await store.events.ownerAfter(owner, 0n, INT64_MAX, n)).length < n) {
    assert.ok(performance.now() < deadline, `${n} events of ${owner} readable`);
    await delay(20);
  }
}

const create = (s: Server, token: string, id: bigint | number, name: string, tag?: string) =>
  send(s.base, token, 'POST', '/plants', `{"id":${id},"name":${JSON.stringify(name)}${tag ? `,"tag":"${tag}"` : ''}}`);
const remove = (s: Server, token: string, id: bigint | number) => send(s.base, token, 'DELETE', `/plants/${id}`);

describeEachStore('live plant events', (fx) => {
  let s: Server;
  const token = (owner: string, scopes: Scope[] = ['plants:read', 'plants:write']) =>
    issueToken(s.store.tokens, { owner, scopes }).then((t) => t.token);

  before(async () => {
    s = await serve(fx, { eventsKeepaliveMs: 15_000 });
  });
  after(async () => {
    await s.app.close();
  });

  it('refuses no token (401), the wrong scope (403) and a malformed Last-Event-ID (400) as JSON', T, async () => {
    const none = await fetch(`${s.base}/plants/events`);
    assert.equal(none.status, 401);
    const listed = (await (await fetch(`${s.base}/plants`)).json()) as { message: string };
    assert.deepEqual(await none.json(), { error: 401, message: listed.message });
    const writeOnly = await token('scope-owner', ['plants:write']);
    const wrongScope = await fetch(`${s.base}/plants/events`, { headers: { authorization: `Bearer ${writeOnly}` } });
    assert.equal(wrongScope.status, 403);
    assert.equal(((await wrongScope.json()) as { error: number }).error, 403);
    const reader = await token('scope-owner');
    for (const bad of ['abc', '-1', '007', '1.0', '', '99999999999999999999', '9223372036854775808']) {
      const r = await fetch(`${s.base}/plants/events`, {
        headers: { authorization: `Bearer ${reader}`, 'last-event-id': bad },
      });
      assert.equal(r.status, 400, bad);
      assert.deepEqual(await r.json(), {
        error: 400,
        message: 'Last-Event-ID must be an event id received from this stream',
      });
    }
  });

  it('answers 406 as JSON to an Accept that does not admit text/event-stream, after the token check', T, async () => {
    const reader = await token('accept-owner');
    const url = `${s.base}/plants/events`;
    const refused = [
      'application/json',
      'text/html, application/json;q=0.9',
      'text/event-stream;q=0, */*',
      'text/event-stream; charset=latin1',
    ];
    for (const accept of refused) {
      assert.equal((await fetch(url, { headers: { accept } })).status, 401, `${accept} without a token`);
      for (const method of ['GET', 'HEAD']) {
        const res = await fetch(url, { method, headers: { authorization: `Bearer ${reader}`, accept } });
        assert.equal(res.status, 406, `${method} ${accept}`);
        if (method === 'GET')
          assert.deepEqual(await res.json(), {
            error: 406,
            message: `this is a Server-Sent Events stream: send Accept: text/event-stream (the Accept header sent, "${accept}", does not admit it)`,
          });
      }
    }
    // What EventSource sends, what curl and fetch send, and other ranges that admit the stream.
    const admitted = [
      'text/event-stream',
      '*/*',
      'text/*',
      'application/json, text/event-stream;q=0.1',
      'text/event-stream; charset=utf-8',
    ];
    for (const [i, accept] of admitted.entries()) {
      const controller = new AbortController();
      const res = await fetch(url, {
        headers: { authorization: `Bearer ${await token(`accept-owner-${i}`)}`, accept },
        signal: controller.signal,
      });
      assert.equal(res.status, 200, accept);
      assert.match(String(res.headers.get('content-type')), /^text\/event-stream/, accept);
      controller.abort();
    }
    // No Accept header at all (fetch always sends one).
    const bare = await s.app.inject({
      method: 'HEAD',
      url: '/plants/events',
      headers: { authorization: `Bearer ${reader}` },
    });
    assert.equal(bare.statusCode, 200);
  });

  it("answers HEAD with the stream's headers at once, holding none of the owner's streams", T, async () => {
    const one = await serve(fx, { eventsMaxStreamsPerOwner: 1 });
    try {
      const reader = await token('head-owner');
      for (let i = 0; i < 3; i++) {
        const head = await fetch(`${one.base}/plants/events`, {
          method: 'HEAD',
          headers: { authorization: `Bearer ${reader}` },
          signal: AbortSignal.timeout(2000),
        });
        assert.equal(head.status, 200);
        assert.match(head.headers.get('content-type')!, /^text\/event-stream/);
        assert.equal(await head.text(), '');
      }
      const stream = await Stream.open(one.base, reader);
      stream.controller.abort();
    } finally {
      await one.app.close();
    }
    const none = await fetch(`${s.base}/plants/events`, { method: 'HEAD' });
    assert.equal(none.status, 401);
  });

  it(
    'sends creates and deletes in commit order, with exact ids, and nothing for replays, conflicts or 404s',
    T,
    async () => {
      const t = await token('order-owner');
      const stream = await Stream.open(s.base, t);
      assert.match(stream.response.headers.get('content-type')!, /^text\/event-stream/);
      assert.equal(await create(s, t, INT64_MAX, 'Fern', 'green'), 200);
      assert.equal(await create(s, t, INT64_MAX, 'Fern', 'green'), 200); // replay
      assert.equal(await create(s, t, INT64_MAX, 'Other'), 409); // conflict
      assert.equal(await remove(s, t, 42), 404);
      assert.equal(await create(s, t, -5, 'Moss'), 200);
      assert.equal(await remove(s, t, INT64_MAX), 204);
      const events = await stream.take(3);
      assert.deepEqual(
        events.map((e) => [e.event, JSON.parse(e.data.replace(/"id":(-?\d+)/, '"id":"$1"')).data]),
        [
          ['plant.created', { id: INT64_MAX.toString(), name: 'Fern', tag: 'green' }],
          ['plant.created', { id: '-5', name: 'Moss' }],
          ['plant.deleted', { id: INT64_MAX.toString() }],
        ],
      );
      assert.match(
        events[0]!.data,
        /^\{"type":"plant.created","timestamp":"\d{4}-\d\d-\d\dT[\d:.]+Z","data":\{"id":9223372036854775807,/,
      );
      const ids = events.map((e) => BigInt(e.id!));
      assert.ok(ids[0]! < ids[1]! && ids[1]! < ids[2]!, `ids increase: ${ids.join(', ')}`);
      assert.ok(await stream.quiet(300), 'no event for the replay, the conflict or the 404');
      stream.close();
    },
  );

  it(
    'holds the 200 until the stream has its place: a write made as soon as it arrives is in the stream',
    T,
    async () => {
      const t = await token('head-owner');
      // The real log, answering slowly: a write that lands between the 200 and
      // the read of where the stream starts would otherwise be skipped.
      const log = s.store.events;
      const bounds = log.bounds.bind(log);
      log.bounds = async () => {
        const read = await bounds();
        await delay(200);
        return read;
      };
      try {
        const stream = await Stream.open(s.base, t);
        assert.equal(await create(s, t, 1, 'first'), 200);
        const [event] = await stream.take(1);
        assert.equal(event?.event, 'plant.created');
        stream.close();
      } finally {
        log.bounds = bounds;
      }
    },
  );

  it('resumes after Last-Event-ID with no gap and no duplicate, then goes on live', T, async () => {
    const t = await token('resume-owner');
    const first = await Stream.open(s.base, t);
    for (let i = 1; i <= 5; i++) assert.equal(await create(s, t, i, `p${i}`), 200);
    const seen = await first.take(5);
    first.close();
    assert.equal(seen.length, 5);
    // Missed while away: 6 and 7.
    assert.equal(await create(s, t, 6, 'p6'), 200);
    assert.equal(await create(s, t, 7, 'p7'), 200);
    const second = await Stream.open(s.base, t, seen[2]!.id);
    const backlog = await second.take(4);
    assert.deepEqual(
      backlog.map((e) => (JSON.parse(e.data) as { data: { name: string } }).data.name),
      ['p4', 'p5', 'p6', 'p7'],
    );
    assert.deepEqual(
      backlog.slice(0, 2).map((e) => e.id),
      seen.slice(3).map((e) => e.id),
    );
    assert.equal(await create(s, t, 8, 'p8'), 200);
    const [live] = await second.take(1);
    assert.equal((JSON.parse(live!.data) as { data: { name: string } }).data.name, 'p8');
    second.close();
  });

  it('shows an owner only its own events', T, async () => {
    const a = await token('owner-a');
    const b = await token('owner-b');
    const streamB = await Stream.open(s.base, b);
    assert.equal(await create(s, a, 1, 'for a'), 200);
    assert.equal(await create(s, b, 1, 'for b'), 200);
    const [event] = await streamB.take(1);
    assert.match(event!.data, /"for b"/);
    assert.ok(await streamB.quiet(300));
    streamB.close();
    // Resuming from before a's event does not show it either.
    const resumed = await Stream.open(s.base, b, (BigInt(event!.id!) - 1n).toString());
    const again = await resumed.take(1);
    assert.equal(again[0]!.id, event!.id);
    assert.ok(await resumed.quiet(300));
    resumed.close();
  });

  it('answers an id no longer kept, or never given out, with a reset event carrying the newest id', T, async () => {
    const t = await token('reset-owner');
    for (let i = 1; i <= 3; i++) assert.equal(await create(s, t, i, `r${i}`), 200);
    await readable(s.store, 'reset-owner', 3);
    const { newest } = await s.store.events.bounds();
    // Keep only the newest event.
    await s.store.events.prune(Date.now() + 60_000, 1);
    assert.deepEqual(
      (await s.store.events.after(0n, 10)).map((e) => e.id),
      [newest],
    );
    for (const from of ['1', INT64_MAX.toString()]) {
      const now = (await s.store.events.bounds()).newest;
      const stream = await Stream.open(s.base, t, from);
      const [reset] = await stream.take(1);
      assert.equal(reset!.event, 'reset');
      assert.equal(reset!.id, now.toString());
      assert.match((JSON.parse(reset!.data) as { message: string }).message, /list the plants again/);
      assert.equal(await create(s, t, 100 + from.length, 'after reset'), 200);
      const [next] = await stream.take(1);
      assert.equal(next!.event, 'plant.created');
      assert.ok(BigInt(next!.id!) > now);
      stream.close();
    }
    // The newest kept id itself still resumes without a reset.
    const ok = await Stream.open(s.base, t, (newest - 1n).toString());
    const [first] = await ok.take(1);
    assert.equal(first!.id, newest.toString());
    ok.close();
  });

  it(
    'after pruning by count, resumes from the largest id pruned and resets below it, though ids skip numbers',
    T,
    async () => {
      const t = await token('mark-owner');
      const stream = await Stream.open(s.base, t);
      for (let i = 1; i <= 4; i++) assert.equal(await create(s, t, i, `m${i}`), 200);
      const ids = (await stream.take(4)).map((e) => BigInt(e.id!));
      stream.close();
      assert.equal(ids.length, 4);
      // Keep two of this owner's four.
      await s.store.events.prune(0, 2);
      assert.equal((await s.store.events.bounds('mark-owner')).pruned, ids[1]);
      const resumed = await Stream.open(s.base, t, ids[1]!.toString());
      assert.deepEqual(
        (await resumed.take(2)).map((e) => [e.event, e.id]),
        [
          ['plant.created', ids[2]!.toString()],
          ['plant.created', ids[3]!.toString()],
        ],
      );
      resumed.close();
      // The event at ids[1] is gone and these never saw it.
      for (const from of [ids[1]! - 1n, ids[0]!]) {
        const reset = await Stream.open(s.base, t, from.toString());
        const [first] = await reset.take(1);
        assert.deepEqual([first!.event, first!.id], ['reset', ids[3]!.toString()]);
        reset.close();
      }
    },
  );
});

describeEachStore(
  'live plant events behind a writing transaction still open',
  (fx) => {
    it(
      "holds back an event committed after another owner's open transaction began writing, until that transaction ends",
      T,
      async () => {
        const s = await serve(fx, { eventsPollMs: 20 });
        try {
          const t = (await issueToken(s.store.tokens, { owner: 'held' })).token;
          const stream = await Stream.open(s.base, t);
          // Another owner's write: it does not make this owner's writes wait.
          const raw = await openEventWriter(fx.directDb, 'holder', 1n, 'drawn first');
          try {
            assert.equal(await create(s, t, 2, 'committed first'), 200);
            assert.equal(await stream.within(500), undefined, 'nothing is sent past the open transaction');
            await raw.query('COMMIT');
          } finally {
            await closeEventWriter(raw);
          }
          const events = await stream.take(1);
          assert.deepEqual(
            events.map((e) => (JSON.parse(e.data) as { data: { name: string } }).data.name),
            ['committed first'],
          );
          stream.close();
        } finally {
          await s.app.close();
        }
      },
    );
  },
  ['postgres', 'pgbouncer'],
);

describeEachStore(
  'live plant events across servers and restarts',
  (fx) => {
    it('reaches a stream on another server sharing the database', T, async () => {
      const one = await serve(fx, { eventsPollMs: 20 });
      const two = await serve(fx, { eventsPollMs: 20 });
      try {
        const t = (await issueToken(one.store.tokens, { owner: 'shared' })).token;
        const stream = await Stream.open(two.base, t);
        assert.equal(await create(one, t, 1, 'via one'), 200);
        const [event] = await stream.take(1);
        assert.match(event!.data, /"via one"/);
        stream.close();
      } finally {
        await one.app.close();
        await two.app.close();
      }
    });

    // The poll would find the event only a minute later: what arrives within a
    // second (of the write, or of its event becoming readable past other
    // transactions in the cluster) came by the wake-up.
    it('with the poll at 60 s, wakes its own streams at once after a write through the same server', T, async () => {
      const s = await serve(fx, { eventsPollMs: 60_000 });
      try {
        const t = (await issueToken(s.store.tokens, { owner: 'woken' })).token;
        const stream = await Stream.open(s.base, t);
        for (const [i, name] of ['first', 'second'].entries()) {
          assert.equal(await create(s, t, i + 1, name), 200);
          await readable(s.store, 'woken', i + 1);
          const [event] = await stream.take(1, 1000);
          assert.match(event?.data ?? 'nothing within 1 s', new RegExp(`"${name}"`));
        }
        assert.equal(await remove(s, t, 1), 204);
        await readable(s.store, 'woken', 3);
        const [deleted] = await stream.take(1, 1000);
        assert.equal(deleted?.event, 'plant.deleted');
        stream.close();
      } finally {
        await s.app.close();
      }
    });

    // Two stores on one file, each with its own file in the signal folder, as two processes have.
    if (fx.kind === 'sqlite')
      it('with the poll at 60 s, reaches a stream on another server on the same file within 1 s', T, async () => {
        const one = await serve(fx, { eventsPollMs: 60_000 });
        const two = await serve(fx, { eventsPollMs: 60_000 });
        try {
          const t = (await issueToken(one.store.tokens, { owner: 'told' })).token;
          const stream = await Stream.open(two.base, t);
          for (const [i, name] of ['told at once', 'and again'].entries()) {
            assert.equal(await create(one, t, i + 1, name), 200);
            const [event] = await stream.take(1, 1000);
            assert.match(event?.data ?? 'nothing within 1 s', new RegExp(`"${name}"`));
          }
          stream.close();
        } finally {
          await one.app.close();
          await two.app.close();
        }
      });

    if (fx.kind === 'postgres')
      it(
        'with the poll at 60 s, reaches a stream on another server within 1 s, also after its LISTEN connection was cut',
        T,
        async () => {
          const one = await serve(fx, { eventsPollMs: 60_000 });
          const two = await serve(fx, { eventsPollMs: 60_000 });
          try {
            const t = (await issueToken(one.store.tokens, { owner: 'told' })).token;
            const stream = await Stream.open(two.base, t);
            // Every LISTEN connection to the database listens (earlier tests' stores' too), and at least these two.
            const listening = async () => {
              const [row] = await pgQuery<{ all: number; listening: number }>(fx.db, LISTENING);
              return row!.listening === row!.all && row!.all >= 2;
            };
            await eventually(listening, 10_000, { what: 'both servers listening' });
            assert.equal(await create(one, t, 1, 'told at once'), 200);
            await readable(one.store, 'told', 1);
            const [event] = await stream.take(1, 1000);
            assert.match(event?.data ?? 'nothing within 1 s', /"told at once"/);

            await pgQuery(fx.db, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${EVENTS_BACKENDS}`);
            await eventually(listening, 10_000, { what: 'both servers listening again' });
            assert.equal(await create(one, t, 2, 'told after reconnecting'), 200);
            await readable(one.store, 'told', 2);
            const [again] = await stream.take(1, 1000);
            assert.match(again?.data ?? 'nothing within 1 s', /"told after reconnecting"/);
            stream.close();
          } finally {
            await one.app.close();
            await two.app.close();
          }
        },
      );

    it('watchPlants yields typed events with bigint ids and resumes by itself across a restart', T, async () => {
      const s = await serve(fx);
      const t = (await issueToken(s.store.tokens, { owner: 'watcher' })).token;
      const port = new URL(s.base).port;
      const client = new PlantStoreClient({ baseUrl: s.base, token: t });
      const controller = new AbortController();
      const changes = client.watchPlants({ signal: controller.signal });
      const got: PlantChange[] = [];
      const reading = (async () => {
        for await (const c of changes) {
          got.push(c);
          if (got.length === 4) controller.abort();
        }
      })();
      await delay(200);
      await client.createPlant({ id: INT64_MAX, name: 'Big' });
      while (got.length < 1) await delay(10);
      // Restart on the same port: the stream ends, and a write happens while no server runs.
      await s.app.close();
      await s.store.plants.create('watcher', { id: 2n, name: 'while away' });
      const restarted = await buildApp(fx.config(), { store: s.store });
      await restarted.listen({ host: '127.0.0.1', port: Number(port) });
      try {
        await client.createPlant({ id: 3n, name: 'after', tag: 't' });
        await client.deletePlant(INT64_MAX);
        await Promise.race([reading, delay(10_000).then(() => assert.fail(`only ${got.length} events`))]);
        assert.deepEqual(
          got.map((c) => (c.type === 'reset' ? c.type : [c.type, c.data])),
          [
            ['plant.created', { id: INT64_MAX, name: 'Big' }],
            ['plant.created', { id: 2n, name: 'while away' }],
            ['plant.created', { id: 3n, name: 'after', tag: 't' }],
            ['plant.deleted', { id: INT64_MAX }],
          ],
        );
      } finally {
        controller.abort();
        await restarted.close();
      }
    });
  },
  ['sqlite', 'postgres', 'pgbouncer'],
);

describe('live plant events: limits, keep-alives, timeouts and shutdown [sqlite]', () => {
  describeEachStore(
    'limits',
    (fx) => {
      it('caps streams per owner and per process with 429', T, async () => {
        const s = await serve(fx, { eventsMaxStreams: 2, eventsMaxStreamsPerOwner: 1 });
        try {
          const a = (await issueToken(s.store.tokens, { owner: 'cap-a' })).token;
          const b = (await issueToken(s.store.tokens, { owner: 'cap-b' })).token;
          const c = (await issueToken(s.store.tokens, { owner: 'cap-c' })).token;
          const first = await Stream.open(s.base, a);
          const again = await fetch(`${s.base}/plants/events`, { headers: { authorization: `Bearer ${a}` } });
          assert.equal(again.status, 429);
          assert.match(((await again.json()) as { message: string }).message, /this owner has 1 live stream/);
          const second = await Stream.open(s.base, b);
          const third = await fetch(`${s.base}/plants/events`, { headers: { authorization: `Bearer ${c}` } });
          assert.equal(third.status, 429);
          assert.deepEqual(Object.keys((await third.json()) as object), ['error', 'message']);
          first.close();
          await delay(100);
          const after = await Stream.open(s.base, c);
          after.close();
          second.close();
        } finally {
          await s.app.close();
        }
      });

      it(
        'keeps an idle stream alive with comments past the request timeout, and ends it promptly at shutdown',
        T,
        async () => {
          const s = await serve(fx, { eventsKeepaliveMs: 100, requestTimeoutMs: 300, headersTimeoutMs: 200 });
          const t = (await issueToken(s.store.tokens, { owner: 'idle' })).token;
          const response = await fetch(`${s.base}/plants/events`, { headers: { authorization: `Bearer ${t}` } });
          const reader = response.body!.getReader();
          let text = '';
          const started = performance.now();
          while (performance.now() - started < 1000) {
            const { value, done } = await reader.read();
            assert.equal(done, false, 'the stream was cut');
            text += new TextDecoder().decode(value);
          }
          assert.ok(text.split(': keep-alive').length >= 5, text);
          const closing = performance.now();
          await s.app.close();
          for (;;) if ((await reader.read()).done) break;
          assert.ok(performance.now() - closing < 2000, 'shutdown ended the stream promptly');
        },
      );
    },
    ['sqlite'],
  );
});
