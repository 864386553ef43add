// The webhook delivery suite: delivery from the transactional outbox, where a
// real delivery loop sends to a real receiver on 127.0.0.1 and every request is
// checked with the standardwebhooks library. test/webhooks/delivery.test.ts runs it on
// SQLite with the retry schedule shortened tenfold; test/slow/webhooks-postgres.test.ts
// on PostgreSQL with the real schedule, its retries seconds apart.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, afterEach, it } from './requirements.js';
import addFormats from 'ajv-formats';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse as parseLossless } from 'lossless-json';
import { pino } from 'pino';
import { Webhook } from 'standardwebhooks';
import { metricsText } from '../../src/metrics/metrics.js';
import { DeliveryLoop } from '../../src/outbox/delivery-loop.js';
import { newSigningSecret, readOrCreateKeyFile } from '../../src/outbox/secret-box.js';
import type { Store, WebhookEventType } from '../../src/store/store.js';
import { useApp, type AppHarness } from './app.js';
import { createOk, createRaw, deletePlant, newOwner } from './plants-http.js';
import type { RetryTiming } from './retry-timing.js';
import type { StoreFixture } from './stores.js';
import { WebhookReceiver, type ReceivedRequest } from './webhook-receiver.js';

const LIMIT = { timeout: 60_000 };
const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhooks-'));
const keyPath = join(dir, 'webhook.key');
after(() => rmSync(dir, { recursive: true, force: true }));

const registered: { store: Store; id: string }[] = [];

/** Registers an endpoint the way `webhook add` does; returns its id and its whsec_ secret. */
async function register(
  store: Store,
  owner: string,
  url: string,
  events: WebhookEventType[] = ['plant.created', 'plant.deleted'],
): Promise<{ id: string; secret: string }> {
  const { box } = readOrCreateKeyFile(keyPath);
  const id = `wh_${Math.random().toString(16).slice(2, 18)}`;
  const secret = newSigningSecret();
  await store.webhooks.add(
    { id, owner, url, events, createdAt: new Date(), keyId: box.keyId },
    box.seal(secret.key, id),
  );
  registered.push({ store, id });
  return { id, secret: secret.text };
}

interface LogLine {
  msg: string;
  level: number;
  webhook?: Record<string, unknown>;
}

/** A delivery loop on the suite's store, with its log lines kept for the test. */
function startLoop(
  store: Store,
  timing: RetryTiming,
  opts: { allowPrivate?: boolean; timeoutMs?: number; keyPath?: string } = {},
) {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const loop = new DeliveryLoop({
    outbox: store.outbox,
    webhooks: store.webhooks,
    keyPath: opts.keyPath ?? keyPath,
    allowPrivate: opts.allowPrivate ?? true,
    timeoutMs: opts.timeoutMs ?? 2000,
    log: pino({ level: 'info' }, sink),
    pollMs: 50,
    retryDelayMs: (attempt) => timing.retryDelayMs(attempt),
  });
  loop.start();
  return { loop, lines };
}

/** The current value of a sample in this process's metrics (0 when absent). */
async function metric(sample: string): Promise<number> {
  for (const line of (await metricsText()).split('\n'))
    if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1));
  return 0;
}

/** The body's data.id as the exact integer the JSON text holds (JSON.parse would round it). */
function exactId(body: string): bigint {
  const parsed = parseLossless(body, null, (digits) => BigInt(digits)) as { data: { id: bigint } };
  return parsed.data.id;
}

/** Asserts the request is a valid Standard Webhooks request signed with `secret`; returns its parsed body. */
function verified(
  r: ReceivedRequest,
  secret: string,
): { type: string; timestamp: string; data: Record<string, unknown> } {
  assert.equal(r.method, 'POST');
  assert.equal(r.headers['content-type'], 'application/json');
  assert.match(r.headers['webhook-id'] ?? '', /^msg_[0-9a-f]{32}$/);
  assert.match(r.headers['webhook-signature'] ?? '', /^v1,[A-Za-z0-9+/]+=*$/);
  const ts = Number(r.headers['webhook-timestamp']);
  assert.ok(Math.abs(ts - Date.now() / 1000) < 60, `webhook-timestamp ${ts} is the attempt's time`);
  // Throws unless the signature matches the id, the timestamp and the exact body.
  return new Webhook(secret).verify(r.body, r.headers) as {
    type: string;
    timestamp: string;
    data: Record<string, unknown>;
  };
}

const byId = (requests: ReceivedRequest[]) => {
  const map = new Map<string, ReceivedRequest[]>();
  for (const r of requests) {
    const id = r.headers['webhook-id']!;
    map.set(id, [...(map.get(id) ?? []), r]);
  }
  return map;
};

/** The suite's tests, on the store of `fx`, with delivery loops retrying on `timing`'s schedule. */
export function webhookDeliverySuite(fx: StoreFixture, timing: RetryTiming): void {
  const h: AppHarness = useApp(fx);
  const receivers: WebhookReceiver[] = [];
  const loops: DeliveryLoop[] = [];
  const receiver = async () => {
    const r = await new WebhookReceiver().start();
    receivers.push(r);
    return r;
  };
  const loopOn = (opts: Parameters<typeof startLoop>[2] = {}) => {
    const started = startLoop(h.store, timing, opts);
    loops.push(started.loop);
    return started;
  };
  // One loop per test: a loop left running would deliver the next test's events.
  afterEach(async () => {
    await Promise.all(loops.splice(0).map((l) => l.stop()));
    await Promise.all(receivers.splice(0).map((r) => r.stop()));
    for (const { store, id } of registered.splice(0)) await store.webhooks.remove(id);
  });

  // The first retry's bounds on this schedule (5 s at most on the real one).
  const firstRetry = { min: timing.retryDelayMs(1, () => 1)!, max: timing.retryDelayMs(1, () => 0)! };
  it(
    'signed events for creates and deletes: each first attempt fails, the first retry of the schedule delivers the same event; ids exact past 2^53',
    LIMIT,
    async () => {
      const rx = await receiver();
      rx.answer = (r) => (r.attempt === 1 ? { status: 500 } : { status: 200 });
      const owner = newOwner('hook');
      const { secret } = await register(h.store, owner, rx.url());
      const other = await register(h.store, newOwner('other'), rx.url('/other'));
      const token = await h.token(owner);
      const delivered = 'plant_store_webhook_deliveries_total{outcome="delivered"}';
      const failed = 'plant_store_webhook_deliveries_total{outcome="failed"}';
      const lagCount = 'plant_store_webhook_delivery_lag_seconds_count';
      const before = { delivered: await metric(delivered), failed: await metric(failed), lag: await metric(lagCount) };
      loopOn();

      const ids = [1n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n), 9007199254740993123n % 2n ** 63n];
      const started = new Date();
      for (const [i, id] of ids.entries()) await createOk(h, token, id, `plant ${i} 🌿`, i % 2 ? 'tagged' : undefined);
      // A replay (200) and a conflict (409) are no events.
      await createOk(h, token, 1n, 'plant 0 🌿');
      assert.equal((await createRaw(h, token, '{"id":1,"name":"another"}')).statusCode, 409);
      assert.equal((await deletePlant(h, token, 2n ** 63n - 1n)).statusCode, 204);
      assert.equal((await deletePlant(h, token, 424242)).statusCode, 404);
      const expected = ids.length + 1;

      await rx.waitFor(
        (all) => all.filter((r) => r.status === 200).length >= expected,
        30_000,
        `${expected} deliveries`,
      );
      await new Promise((r) => setTimeout(r, 500)); // nothing more may come
      const attempts = byId(rx.requests);
      assert.equal(
        attempts.size,
        expected,
        'one event per acknowledged create or delete, none for replays or conflicts',
      );
      const events: { type: string; data: Record<string, unknown>; id: bigint }[] = [];
      for (const [, [first, second, ...more]] of attempts) {
        assert.equal(more.length, 0, 'no attempt after the delivery');
        assert.equal(first!.status, 500);
        assert.equal(second!.status, 200);
        assert.equal(second!.body, first!.body, 'every attempt carries the same body');
        assert.equal(first!.path, '/hook', "the owner's own endpoint only");
        const gap = second!.at - first!.at;
        assert.ok(
          gap >= firstRetry.min - 50 && gap <= firstRetry.max + 500,
          `first retry ${firstRetry.min} to ${firstRetry.max} ms after the first attempt (took ${Math.round(gap)} ms)`,
        );
        const body = verified(first!, secret);
        verified(second!, secret);
        assert.ok(Date.parse(body.timestamp) >= started.getTime() - 1000, `timestamp ${body.timestamp}`);
        assert.match(body.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
        events.push({ type: body.type, data: body.data, id: exactId(second!.body) });
      }
      const created = events.filter((e) => e.type === 'plant.created');
      assert.deepEqual(
        created.map((e) => e.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
        [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
        'every id arrives exact',
      );
      for (const e of created) {
        const i = ids.indexOf(e.id);
        assert.equal(e.data.name, `plant ${i} 🌿`);
        assert.equal(e.data.tag, i % 2 ? 'tagged' : undefined, 'tag only when stored');
      }
      const deleted = events.filter((e) => e.type === 'plant.deleted');
      assert.deepEqual(
        deleted.map((e) => e.id),
        [2n ** 63n - 1n],
      );
      assert.deepEqual(Object.keys(deleted[0]!.data), ['id']);
      assert.equal(other.id.length > 0, true);
      assert.equal(rx.requests.filter((r) => r.path === '/other').length, 0, "another owner's endpoint hears nothing");
      assert.equal((await metric(delivered)) - before.delivered, expected, 'deliveries counted');
      assert.equal((await metric(failed)) - before.failed, expected, 'failed attempts counted');
      assert.equal((await metric(lagCount)) - before.lag, expected, 'the lag of each delivery observed');
    },
  );

  it('the delivered bodies match the webhooks of the served OpenAPI document', LIMIT, async () => {
    const rx = await receiver();
    const owner = newOwner('doc');
    await register(h.store, owner, rx.url());
    const token = await h.token(owner);
    loopOn();
    await createOk(h, token, 7, 'Fern', 'green');
    await createOk(h, token, 8, 'Moss');
    assert.equal((await deletePlant(h, token, 7)).statusCode, 204);
    await rx.waitFor((all) => all.length >= 3, 20_000, 'three deliveries');

    const doc = JSON.parse((await h.request({ method: 'GET', url: '/openapi.json' })).body) as {
      webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: unknown }> } } }>;
    };
    assert.deepEqual(Object.keys(doc.webhooks).sort(), ['plant.created', 'plant.deleted']);
    const ajv = addFormats.default(new Ajv2020({ strict: false }));
    ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) });
    ajv.addFormat('date-time', { type: 'string', validate: (s: string) => !Number.isNaN(Date.parse(s)) });
    ajv.addSchema(doc as object, 'doc');
    for (const r of rx.requests) {
      const type = (JSON.parse(r.body) as { type: string }).type;
      const schema = doc.webhooks[type]!.post.requestBody.content['application/json']!.schema as { $ref: string };
      const validate = ajv.compile({ $ref: `doc${schema.$ref}` });
      assert.ok(validate(JSON.parse(r.body)), `${r.body}: ${JSON.stringify(validate.errors)}`);
    }
  });

  it('Retry-After is honoured: the next attempt waits at least as long as asked', LIMIT, async () => {
    const asked = timing.retryAfterS * 1000;
    assert.ok(asked > firstRetry.max, 'Retry-After asks for longer than the backoff would wait');
    const rx = await receiver();
    rx.answer = (r) =>
      r.attempt === 1 ? { status: 503, headers: { 'retry-after': String(timing.retryAfterS) } } : { status: 200 };
    const owner = newOwner('later');
    await register(h.store, owner, rx.url());
    loopOn();
    await createOk(h, await h.token(owner), 1, 'Slow');
    await rx.waitFor((all) => all.some((r) => r.status === 200), 20_000, 'the delivery after Retry-After');
    const [first, second] = rx.requests;
    const gap = second!.at - first!.at;
    assert.ok(gap >= asked - 50, `retried after ${Math.round(gap)} ms, Retry-After asked ${asked}`);
    assert.ok(gap < asked + 2_000, `and not much later: ${Math.round(gap)} ms`);
  });

  it(
    '410 Gone disables the endpoint and drops its waiting events; later writes queue nothing for it',
    LIMIT,
    async () => {
      const rx = await receiver();
      rx.answer = () => ({ status: 410 });
      const owner = newOwner('gone');
      const { id } = await register(h.store, owner, rx.url());
      const token = await h.token(owner);
      const { lines } = loopOn();
      await createOk(h, token, 1, 'One');
      await createOk(h, token, 2, 'Two');
      await rx.waitFor((all) => all.length >= 1, 20_000, 'the first attempt');
      const deadline = Date.now() + 10_000;
      let endpoint;
      do {
        await new Promise((r) => setTimeout(r, 100));
        endpoint = (await h.store.webhooks.list()).find((e) => e.id === id)!;
      } while (!endpoint.disabledAt && Date.now() < deadline);
      assert.ok(endpoint.disabledAt, 'disabled');
      assert.match(endpoint.disabledReason ?? '', /410/);
      assert.equal(endpoint.pending, 0, 'its waiting events are dropped');
      await createOk(h, token, 3, 'Three');
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(rx.requests.length, 1, 'nothing more is sent to it');
      assert.equal((await h.store.webhooks.list()).find((e) => e.id === id)!.pending, 0);
      assert.ok(lines.some((l) => /410 Gone/.test(l.msg) && l.webhook?.endpoint === id));
    },
  );

  it('redirects are not followed, and an attempt that gets no answer times out; both are retried', LIMIT, async () => {
    const target = await receiver();
    const rx = await receiver();
    rx.answer = (r) =>
      r.path === '/redirect'
        ? { status: 307, headers: { location: target.url() } }
        : r.attempt === 1
          ? 'hold'
          : { status: 200 };
    const owner = newOwner('redir');
    await register(h.store, owner, rx.url('/redirect'), ['plant.created']);
    const slow = newOwner('slow');
    await register(h.store, slow, rx.url('/slow'), ['plant.created']);
    const { lines } = loopOn({ timeoutMs: 500 });
    await createOk(h, await h.token(owner), 1, 'Moved');
    await createOk(h, await h.token(slow), 1, 'Held');
    await rx.waitFor(
      (all) =>
        all.filter((r) => r.path === '/redirect').length >= 2 &&
        all.some((r) => r.path === '/slow' && r.status === 200),
      20_000,
      'a retry of the redirected event and the delivery of the held one',
    );
    assert.equal(target.requests.length, 0, 'the redirect was not followed');
    const failures = lines.filter((l) => l.msg === 'webhook attempt failed; will retry').map((l) => l.webhook!);
    assert.ok(failures.some((w) => w.status === 307 && /redirects are not followed/.test(String(w.error))));
    assert.ok(failures.some((w) => /no answer within 500 ms/.test(String(w.error))));
    const held = rx.requests.filter((r) => r.path === '/slow');
    assert.equal(held[1]!.headers['webhook-id'], held[0]!.headers['webhook-id'], 'the retry is the same event');
  });

  it('refuses loopback addresses unless private addresses are allowed, and says so in the log', LIMIT, async () => {
    const rx = await receiver();
    const owner = newOwner('ssrf');
    await register(h.store, owner, rx.url('/literal'), ['plant.created']);
    await register(h.store, owner, `http://localhost:${rx.port}/name`, ['plant.created']);
    await register(h.store, owner, `http://[::ffff:127.0.0.1]:${rx.port}/mapped`, ['plant.created']);
    const { lines } = loopOn({ allowPrivate: false });
    await createOk(h, await h.token(owner), 1, 'Probe');
    const deadline = Date.now() + 10_000;
    const refusals = () => lines.filter((l) => /^refused: /.test(String(l.webhook?.error)));
    while (refusals().length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const errors = refusals().map((l) => String(l.webhook!.error));
    assert.equal(errors.length, 3, `three refusals in the log: ${JSON.stringify(lines)}`);
    assert.ok(errors.some((e) => /127\.0\.0\.1, a loopback address/.test(e)));
    assert.ok(errors.some((e) => /localhost resolves to (127\.0\.0\.1|::1), a loopback address/.test(e)));
    assert.equal(rx.requests.length, 0, 'no connection was made');
    for (const l of lines) assert.doesNotMatch(JSON.stringify(l), /whsec_/, 'the log never carries a secret');
  });

  it(
    'a process without the key an endpoint was registered with leaves its events alone and says so',
    LIMIT,
    async () => {
      const rx = await receiver();
      const owner = newOwner('key');
      const { id } = await register(h.store, owner, rx.url());
      await createOk(h, await h.token(owner), 1, 'Locked');
      const missing = startLoop(h.store, timing, { keyPath: join(dir, 'absent.key') });
      readOrCreateKeyFile(join(dir, 'other.key'));
      const other = startLoop(h.store, timing, { keyPath: join(dir, 'other.key') });
      loops.push(missing.loop, other.loop);
      const deadline = Date.now() + 5_000;
      const said = (lines: LogLine[], what: RegExp) =>
        lines.some((l) => what.test(l.msg) && (l.webhook?.endpoints as string[] | undefined)?.includes(id));
      while (
        !(said(missing.lines, /key file does not exist/) && said(other.lines, /another webhook key/)) &&
        Date.now() < deadline
      )
        await new Promise((r) => setTimeout(r, 50));
      assert.ok(said(missing.lines, /key file does not exist/), JSON.stringify(missing.lines));
      assert.ok(said(other.lines, /another webhook key/), JSON.stringify(other.lines));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(rx.requests.length, 0, 'neither sends the event');
      loopOn();
      await rx.waitFor((all) => all.length === 1, 10_000, 'the delivery by a process with the key');
    },
  );
}
