// Webhook delivery under a misbehaving owner, on every store: hung endpoints
// of one owner do not hold back another owner's events; a create stores one
// event however many endpoints there are; endpoints per owner are capped; the
// events waiting for one endpoint are bounded; and a receiver that is down
// costs one attempt per backoff, not one per waiting event.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { after, afterEach, before, it } from '../helpers/requirements.js';
import { runCliInProcess as runCli } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { fanOutWithoutDelivering } from '../helpers/outbox.js';
import { describeEachStore } from '../helpers/stores.js';
import { TENFOLD_RETRIES, type RetryTiming } from '../helpers/retry-timing.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';
import { DeliveryLoop } from '../../src/outbox/delivery-loop.js';
import { newSigningSecret, readOrCreateKeyFile } from '../../src/outbox/secret-box.js';
import type { Store } from '../../src/store/store.js';

const LIMIT = { timeout: 60_000 };
const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhook-isolation-'));
const keyPath = join(dir, 'webhook.key');
after(() => rmSync(dir, { recursive: true, force: true }));

let nextOwner = 0;
const newOwner = (what: string) => `${what}-${process.pid}-${++nextOwner}`;

async function register(store: Store, owner: string, url: string): Promise<string> {
  const { box } = readOrCreateKeyFile(keyPath);
  const id = `wh_${Math.random().toString(16).slice(2, 18)}`;
  await store.webhooks.add(
    { id, owner, url, events: ['plant.created', 'plant.deleted'], createdAt: new Date(), keyId: box.keyId },
    box.seal(newSigningSecret().key, id),
  );
  return id;
}

/** Accepts connections and never answers: a hung receiver. */
async function hungServer(): Promise<{ server: Server; port: number }> {
  const sockets = new Set<Socket>();
  const server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { server, port: (server.address() as { port: number }).port };
}

/** A port nothing listens on: every connection is refused, as with a receiver that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describeEachStore('webhooks: isolation and caps', (fx) => {
  let store: Store;
  const loops: DeliveryLoop[] = [];
  before(async () => {
    store = await fx.open();
  });
  afterEach(async () => {
    for (const loop of loops.splice(0)) await loop.stop();
    // Each test's endpoints go, so the next test starts with none.
    for (const e of await store.webhooks.list()) await store.webhooks.remove(e.id);
  });

  function startLoop(opts: { timeoutMs?: number; maxPending?: number; timing?: RetryTiming } = {}) {
    const lines: { msg: string }[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n'))
          if (line) lines.push(JSON.parse(line) as { msg: string });
        done();
      },
    });
    const loop = new DeliveryLoop({
      outbox: store.outbox,
      webhooks: store.webhooks,
      keyPath,
      allowPrivate: true,
      timeoutMs: opts.timeoutMs ?? 3_000,
      log: pino({ level: 'info' }, sink),
      pollMs: 20,
      ...(opts.maxPending === undefined ? {} : { maxPending: opts.maxPending }),
      ...(opts.timing === undefined ? {} : { retryDelayMs: (attempt: number) => opts.timing!.retryDelayMs(attempt) }),
    });
    loops.push(loop);
    loop.start();
    return { loop, lines };
  }

  it("100 hung endpoints of one owner do not delay another owner's event", LIMIT, async () => {
    const { port } = await hungServer();
    const slow = newOwner('slow');
    for (let i = 0; i < 100; i++) await register(store, slow, `http://127.0.0.1:${port}/hung/${i}`);
    const rx = await new WebhookReceiver().start();
    after(() => rx.stop());
    const fast = newOwner('fast');
    await register(store, fast, rx.url());
    startLoop({ timeoutMs: 5_000 });
    await store.plants.create(slow, { id: 1n, name: 'first' });
    // Let the hung endpoints take what they can.
    await new Promise((r) => setTimeout(r, 300));
    const started = performance.now();
    await store.plants.create(fast, { id: 1n, name: 'second' });
    await rx.waitFor((all) => all.length >= 1, 10_000, "the other owner's event");
    const delayMs = rx.requests[0]!.at - started;
    assert.ok(delayMs < 1_500, `delivered ${Math.round(delayMs)} ms after the create (attempt time limit 5000 ms)`);
  });

  it('a create stores one event however many endpoints the owner has', LIMIT, async () => {
    const owner = newOwner('wide');
    const port = await closedPort();
    for (let i = 0; i < 200; i++) await register(store, owner, `http://127.0.0.1:${port}/${i}`);
    await store.plants.create(owner, { id: 1n, name: 'fern' });
    const pending = (await store.webhooks.list()).map((e) => e.pending);
    assert.deepEqual(new Set(pending), new Set([0]), 'no per-endpoint row is written by the create');
    // Claims fan the event out (a key no endpoint has: nothing is claimed); on PostgreSQL the
    // event is there once every older writing transaction of the cluster has ended.
    let after: number[] = [];
    await eventually(
      async () => {
        const claimed = await fanOutWithoutDelivering(store);
        assert.equal(claimed.length, 0);
        after = (await store.webhooks.list()).map((e) => e.pending);
        return after.every((n) => n === 1);
      },
      10_000,
      { stepMs: 20, what: 'the event fanned out' },
    );
    assert.equal(after.length, 200);
    assert.deepEqual(new Set(after), new Set([1]), 'fanned out to each endpoint at delivery time');
  });

  it('past --webhooks-max-pending an endpoint is disabled, and webhook list says why', LIMIT, async () => {
    const owner = newOwner('behind');
    const port = await closedPort();
    await register(store, owner, `http://127.0.0.1:${port}/down`);
    for (let i = 1; i <= 8; i++) await store.plants.create(owner, { id: BigInt(i), name: `p${i}` });
    const { lines } = startLoop({ maxPending: 5 });
    const deadline = Date.now() + 10_000;
    let endpoint = (await store.webhooks.list())[0]!;
    while (!endpoint.disabledAt && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      endpoint = (await store.webhooks.list())[0]!;
    }
    assert.ok(endpoint.disabledAt, 'disabled');
    assert.match(endpoint.disabledReason ?? '', /more than 5 events waited for delivery \(--webhooks-max-pending\)/);
    assert.equal(endpoint.pending, 0, 'its events were dropped');
    assert.equal(lines.filter((l) => l.msg.startsWith('webhook attempt')).length, 0, 'none was attempted');
    const r = await runCli(['webhook', 'list', '--db', fx.db]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /disabled .*more than 5 events waited/);
  });

  it('a receiver that is down gets one attempt per backoff, however many events wait', LIMIT, async () => {
    const owner = newOwner('down');
    const port = await closedPort();
    await register(store, owner, `http://127.0.0.1:${port}/down`);
    for (let i = 1; i <= 50; i++) await store.plants.create(owner, { id: BigInt(i), name: `p${i}` });
    const timing = TENFOLD_RETRIES;
    const { lines } = startLoop({ timing });
    const attempts = () => lines.filter((l) => l.msg.startsWith('webhook attempt failed')).length;
    const deadline = Date.now() + 10_000;
    while (attempts() === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    // The next attempt may come only after the first backoff: watch for less than its shortest.
    const watchMs = timing.retryDelayMs(1, () => 1)! - 75;
    await new Promise((r) => setTimeout(r, watchMs));
    assert.equal(attempts(), 1, `${attempts()} attempts within ${watchMs} ms of the first`);
    // All of them wait (on PostgreSQL an event is fanned out once it is readable, which may come a little later).
    await eventually(async () => (await store.webhooks.list())[0]!.pending === 50, 5_000, {
      what: 'the 50 events waiting',
    });
  });
});

describeEachStore('webhook add: endpoints per owner', (fx) => {
  it('refuses an endpoint past --webhooks-max-endpoints with a clear error', LIMIT, async () => {
    const add = () =>
      runCli([
        'webhook',
        'add',
        '--db',
        fx.db,
        '--webhook-key-file',
        keyPath,
        '--webhooks-max-endpoints',
        '2',
        '--owner',
        'capped',
        '--url',
        'https://example.com/hook',
      ]);
    assert.equal((await runCli(['migrate', '--db', fx.db])).code, 0);
    assert.equal((await add()).code, 0);
    assert.equal((await add()).code, 0);
    const third = await add();
    assert.equal(third.code, 1);
    assert.match(
      third.stderr,
      /owner "capped" has 2 active webhook endpoints already, the most allowed \(--webhooks-max-endpoints\)/,
    );
    assert.equal(third.stdout, '', 'no secret printed');
  });
});
