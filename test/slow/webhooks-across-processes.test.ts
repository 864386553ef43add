// Webhooks across server processes: kill -9 between the acknowledgement of a
// write and the delivery of its event, two instances on one PostgreSQL (in this
// process, each with its own delivery loop and pool), and serve --workers 2 on
// one SQLite file.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, it } from '../helpers/requirements.js';
import { parse as parseLossless } from 'lossless-json';
import { Webhook } from 'standardwebhooks';
import {
  cliToken,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  useProcessCleanup,
} from '../helpers/server.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { describeEachStore, describeOnStore, type StoreFixture } from '../helpers/stores.js';
import { WebhookReceiver, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import { runCliInProcess } from '../helpers/cli.js';

const LIMIT = { timeout: 90_000 };
const dir = mkdtempSync(join(tmpdir(), 'plant-store-webhooks-process-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** `webhook add` through the CLI; returns the secret (the last line of stdout). */
async function addWebhook(db: string, keyPath: string, owner: string, url: string): Promise<string> {
  const r = await runCliInProcess([
    'webhook',
    'add',
    '--owner',
    owner,
    '--url',
    url,
    '--db',
    db,
    '--webhook-key-file',
    keyPath,
  ]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout.trim().split('\n').at(-1)!;
}

function webhookServeArgs(fx: StoreFixture, keyPath: string, ...extra: string[]): string[] {
  return [
    ...serveArgs(fx.db, '--webhooks-allow-private', '--webhook-timeout-ms', '500', '--webhook-key-file', keyPath),
    ...extra,
  ];
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
after(() => agent.destroy());

/** POST /plants with an exact int64 id (written by hand: JSON.stringify cannot); resolves to the status. */
function createPlant(baseUrl: string, token: string, id: bigint): Promise<number> {
  const body = `{"id":${id},"name":"plant ${id}"}`;
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${baseUrl}/plants`,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The plant id of a delivered event, exact. */
function plantIdOf(r: ReceivedRequest): bigint {
  return (parseLossless(r.body, null, (digits) => BigInt(digits)) as { data: { id: bigint } }).data.id;
}

/** Ids past 2^53, so any rounding on the way would show. */
const idAt = (i: number): bigint => 2n ** 60n + BigInt(i) * 1_000_003n;

describeEachStore('webhooks across processes', (fx) => {
  useProcessCleanup();
  const receivers: WebhookReceiver[] = [];
  after(async () => {
    for (const r of receivers) await r.stop();
  });

  it(
    'kill -9 between the acknowledgement and the delivery: after a restart every acknowledged create arrives',
    LIMIT,
    async (t) => {
      await migrateWithCli(fx.db);
      const keyPath = join(dir, `${fx.kind}-kill.key`);
      const rx = await new WebhookReceiver().start();
      receivers.push(rx);
      const owner = 'killed';
      const token = await cliToken(fx.db, owner);
      const secret = await addWebhook(fx.db, keyPath, owner, rx.url());
      // Before the kill nothing is answered: attempts are under way or waiting.
      rx.answer = () => 'hold';
      // A short lease, so the events the killed process held go out again within seconds.
      const leased = ['--webhook-lease-ms', '2000'];
      const server = await startServer(webhookServeArgs(fx, keyPath, ...leased));
      const n = 40;
      const statuses = await Promise.all(Array.from({ length: n }, (_, i) => createPlant(server.url, token, idAt(i))));
      assert.deepEqual(new Set(statuses), new Set([200]), 'every create acknowledged');
      await rx.waitFor((all) => all.length > 0, 10_000, 'a delivery under way');
      server.kill('SIGKILL');
      const killedAt = performance.now();
      assert.deepEqual(await server.waitExit(), { code: null, signal: 'SIGKILL' });
      assert.equal(rx.delivered().length, 0, 'nothing was delivered before the kill');
      const inFlight = rx.requests.map((r) => r.headers['webhook-id']!);

      rx.releaseHeld();
      rx.answer = () => ({ status: 200 });
      const restarted = await serveInProcess(webhookServeArgs(fx, keyPath, ...leased));
      // Events claimed by the killed process wait for their lease to run out (2 s here).
      await rx.waitFor(
        (all) => new Set(all.filter((r) => r.status === 200).map(plantIdOf)).size >= n,
        45_000,
        `all ${n} events after the restart`,
      );
      // Without --webhook-lease-ms the lease would be 4 × (500 + 500) + 5000 ms.
      const waited = performance.now() - killedAt;
      assert.ok(waited < 9_000, `all delivered ${Math.round(waited)} ms after the kill, sooner than the default lease`);
      await stopGracefully(restarted);
      const delivered = rx.delivered();
      assert.deepEqual(
        [...new Set(delivered.map(plantIdOf))].sort((a, b) => (a < b ? -1 : 1)),
        Array.from({ length: n }, (_, i) => idAt(i)),
      );
      for (const r of delivered) new Webhook(secret).verify(r.body, r.headers);
      const deliveredIds = new Set(delivered.map((r) => r.headers['webhook-id']));
      for (const id of inFlight)
        assert.ok(deliveredIds.has(id), `the event in flight at the kill (${id}) keeps its webhook-id`);
      t.diagnostic(
        `kill -9 [${fx.kind}]: ${n} acknowledged, ${inFlight.length} attempts under way or failed before the kill, ${delivered.length} deliveries after the restart`,
      );
    },
  );
});

async function deliverWithoutDuplicates(
  t: TestContext,
  fx: StoreFixture,
  servers: string[][],
  label: string,
): Promise<void> {
  await migrateWithCli(fx.db);
  const keyPath = join(dir, `${fx.kind}-${label}.key`);
  const rx = await new WebhookReceiver().start();
  try {
    const owners = ['a', 'b', 'c'].map((o) => `${label}-${o}`);
    const tokens = await Promise.all(owners.map((o) => cliToken(fx.db, o)));
    const secrets = new Map<string, string>();
    for (const o of owners) secrets.set(`/${o}`, await addWebhook(fx.db, keyPath, o, rx.url(`/${o}`)));
    const started = await Promise.all(
      servers.map((extra) => {
        const args = webhookServeArgs(fx, keyPath, '--log-level', 'info', ...extra);
        // Workers are processes of their own; instances need not be.
        if (!extra.includes('--workers')) return serveInProcess(args);
        return startServer(args, { listeners: Number(extra[extra.indexOf('--workers') + 1]) });
      }),
    );
    const perOwner = 60;
    const jobs: Promise<number>[] = [];
    for (let i = 0; i < perOwner; i++) {
      for (const [k, token] of tokens.entries()) {
        const server = started[(i + k) % started.length]!;
        jobs.push(createPlant(server.url, token, idAt(i)));
      }
    }
    assert.deepEqual(new Set(await Promise.all(jobs)), new Set([200]));
    const total = perOwner * owners.length;
    await rx.waitFor(() => rx.delivered().length >= total, 45_000, `${total} deliveries`);
    await new Promise((r) => setTimeout(r, 1000)); // a second delivery of any event would come now
    await stopGracefully(...started);
    const delivered = rx.delivered();
    const ids = delivered.map((r) => r.headers['webhook-id']);
    assert.equal(new Set(ids).size, total, 'every event delivered');
    assert.equal(ids.length, total, 'and none twice');
    for (const r of delivered) new Webhook(secrets.get(r.path)!).verify(r.body, r.headers);
    // Per server, or per worker (the workers of serve --workers share their primary's stdout).
    const deliveredBy = new Map<unknown, number>();
    for (const [i, s] of started.entries())
      for (const l of s.logLines())
        if (l.msg === 'webhook delivered') {
          const by = s.pid === process.pid ? `instance ${i + 1}` : l.pid;
          deliveredBy.set(by, (deliveredBy.get(by) ?? 0) + 1);
        }
    t.diagnostic(
      `${label} [${fx.kind}]: ${total} events delivered once each; deliveries per server or worker: ${[...deliveredBy.values()].join(', ')}`,
    );
  } finally {
    await rx.stop();
  }
}

describeOnStore('postgres', 'webhooks with two instances on one PostgreSQL', (fx) => {
  useProcessCleanup();
  it('each event is claimed by one instance: none lost, none delivered twice', LIMIT, (t) =>
    deliverWithoutDuplicates(t, fx, [[], []], 'two-instances'),
  );
});

describeOnStore('sqlite', 'webhooks with serve --workers 2 on one SQLite file', (fx) => {
  useProcessCleanup();
  it('each event is claimed by one worker: none lost, none delivered twice', LIMIT, (t) =>
    deliverWithoutDuplicates(t, fx, [['--workers', '2']], 'workers'),
  );
});
