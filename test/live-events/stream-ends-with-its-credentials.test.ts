// An open GET /plants/events stream ends when its credentials do: revoked by
// the CLI (a process of its own), expired, a JWT past its exp, or the token's
// plants:read scope gone. Each time the stream's last event is
// `unauthorized`, sent before the end, within 1 s; watchPlants throws a
// CredentialsEndedError instead of reconnecting.
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { readEventStream, type ServerSentEvent } from '../../packages/client/src/event-stream.js';
import { issueToken } from '../../src/auth/tokens.js';
import { eventStreamsEndedWithCredentials } from '../../src/metrics/metrics.js';
import { CredentialsEndedError, PlantStoreClient } from '../../src/client/index.js';
import { runCliInProcess } from '../helpers/cli.js';
import { AUDIENCE, TestIssuer } from '../helpers/jwt-issuer.js';
import { after, before, it } from '../helpers/requirements.js';
import { delay, migrateWithCli, runCli, useProcessCleanup } from '../helpers/server.js';
import { listenApp, type ListeningApp } from '../helpers/app.js';
import { describeEachStore } from '../helpers/stores.js';

const T = { timeout: 20_000 };
const WITHIN_MS = 1000;

type Server = ListeningApp;
const serve = listenApp;

interface Opened {
  events: ServerSentEvent[];
  /** Resolves with Date.now() when the server ends the body. */
  ended: Promise<number>;
  close(): void;
}

async function openStream(base: string, token: string): Promise<Opened> {
  const controller = new AbortController();
  const response = await fetch(`${base}/plants/events`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: controller.signal,
  });
  assert.equal(response.status, 200, await (response.ok ? '' : response.text()));
  const events: ServerSentEvent[] = [];
  const ended = (async () => {
    for await (const e of readEventStream(response.body!)) events.push(e);
    return Date.now();
  })();
  ended.catch(() => {});
  return { events, ended, close: () => controller.abort() };
}

/** Waits for the stream's end, failing after `ms`. */
async function endOf(stream: Opened, ms: number): Promise<number> {
  const timer = delay(ms).then(() => undefined);
  const at = await Promise.race([stream.ended, timer]);
  if (at === undefined) {
    stream.close();
    assert.fail(`the stream was still open ${ms} ms later; it got ${JSON.stringify(stream.events)}`);
  }
  return at;
}

/** How many streams of this process have ended for this reason. */
const endedFor = async (reason: string) =>
  (await eventStreamsEndedWithCredentials.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;

/** The stream's last event is `unauthorized` with this reason. */
function endedWith(stream: Opened, reason: string): void {
  const last = stream.events.at(-1);
  assert.equal(last?.event, 'unauthorized', JSON.stringify(stream.events));
  const data = JSON.parse(last.data) as { type: string; reason: string; message: string };
  assert.equal(data.type, 'unauthorized');
  assert.equal(data.reason, reason);
  assert.match(data.message, /stream|reconnect/);
}

const create = async (base: string, token: string, id: number) => {
  const r = await fetch(`${base}/plants`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: `{"id":${id},"name":"p${id}"}`,
  });
  await r.arrayBuffer();
  return r.status;
};

describeEachStore('a live stream whose token is revoked', (fx) => {
  useProcessCleanup();
  let s: Server;
  before(async () => {
    await migrateWithCli(fx.db);
    s = await serve(fx);
  });
  after(() => s?.app.close());

  it('gets an unauthorized event and ends within 1 s of `token revoke` run as another process', T, async () => {
    const created = await runCliInProcess(['token', 'create', '--owner', 'revoked-reader', '--db', fx.db]);
    assert.equal(created.code, 0, created.stderr);
    const token = created.stdout.trim();
    const id = /tok_[0-9a-f]+/.exec(created.stderr)![0];
    const writer = (await issueToken(s.store.tokens, { owner: 'revoked-reader' })).token;
    const stream = await openStream(s.base, token);
    assert.equal(await create(s.base, writer, 1), 200);
    while (stream.events.length === 0) await delay(10);
    const endedBefore = await endedFor('revoked');
    const revoke = await runCli(['token', 'revoke', id, '--db', fx.db]);
    assert.equal(revoke.code, 0, revoke.stderr);
    const revokedAt = Date.now();
    const endedAt = await endOf(stream, 3000);
    assert.ok(endedAt - revokedAt <= WITHIN_MS, `ended ${endedAt - revokedAt} ms after token revoke exited`);
    assert.deepEqual(
      stream.events.map((e) => e.event),
      ['plant.created', 'unauthorized'],
    );
    endedWith(stream, 'revoked');
    assert.equal(
      await endedFor('revoked'),
      endedBefore + 1,
      'counted in plant_store_event_streams_credentials_ended_total',
    );
    // A write after the end reaches no one, and the token opens no new stream.
    assert.equal(await create(s.base, writer, 2), 200);
    const again = await fetch(`${s.base}/plants/events`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(again.status, 401);
  });

  it('ends every stream of the token, and only those', T, async () => {
    const revoked = await issueToken(s.store.tokens, { owner: 'two-tokens' });
    const kept = (await issueToken(s.store.tokens, { owner: 'two-tokens' })).token;
    const streams = [await openStream(s.base, revoked.token), await openStream(s.base, revoked.token)];
    const other = await openStream(s.base, kept);
    await s.store.tokens.revoke(revoked.record.id, new Date());
    for (const stream of streams) {
      await endOf(stream, 3000);
      endedWith(stream, 'revoked');
    }
    assert.equal(await create(s.base, kept, 1), 200);
    while (other.events.length === 0) await delay(10);
    assert.equal(other.events[0]!.event, 'plant.created', 'the other token still streams');
    other.close();
  });

  it('ends within 1 s of a token expiry (token create --expires-in)', T, async () => {
    const created = await runCliInProcess([
      'token',
      'create',
      '--owner',
      'expiring',
      '--expires-in',
      '2s',
      '--db',
      fx.db,
    ]);
    assert.equal(created.code, 0, created.stderr);
    const id = /tok_[0-9a-f]+/.exec(created.stderr)![0];
    const expiresAt = (await s.store.tokens.list()).find((t) => t.id === id)!.expiresAt!.getTime();
    const stream = await openStream(s.base, created.stdout.trim());
    const endedAt = await endOf(stream, 5000);
    assert.ok(endedAt >= expiresAt - 5, `ended ${expiresAt - endedAt} ms before the expiry`);
    assert.ok(endedAt - expiresAt <= WITHIN_MS, `ended ${endedAt - expiresAt} ms after the expiry`);
    endedWith(stream, 'expired');
  });
});

describeEachStore(
  'a live stream whose credentials end otherwise',
  (fx) => {
    let issuer: TestIssuer;
    let kid: string;
    let s: Server;
    before(async () => {
      issuer = await TestIssuer.start();
      kid = await issuer.addKey('ES256');
      s = await serve(fx, { jwksUrl: issuer.jwksUrl, jwtIssuer: issuer.url, jwtAudience: AUDIENCE });
    });
    after(async () => {
      await s?.app.close();
      await issuer?.close();
    });

    it("ends within 1 s of a JWT's exp", T, async () => {
      const exp = Math.floor(Date.now() / 1000) + 2;
      const jwt = await issuer.sign(kid, 'jwt-reader', { exp });
      const stream = await openStream(s.base, jwt);
      const endedAt = await endOf(stream, 5000);
      assert.ok(endedAt >= exp * 1000 - 5, `ended ${exp * 1000 - endedAt} ms before exp`);
      assert.ok(endedAt - exp * 1000 <= WITHIN_MS, `ended ${endedAt - exp * 1000} ms after exp`);
      endedWith(stream, 'expired');
    });

    it('ends within 1 s of the token losing plants:read in the database', T, async () => {
      const { token, record } = await issueToken(s.store.tokens, { owner: 'scope-lost' });
      const stream = await openStream(s.base, token);
      const endedBefore = await endedFor('scope');
      // Another connection to the file, as an operator's tool would use.
      const db = new Database(fx.db);
      try {
        db.prepare("UPDATE tokens SET scopes = 'plants:write' WHERE id = ?").run(record.id);
      } finally {
        db.close();
      }
      const changedAt = Date.now();
      const endedAt = await endOf(stream, 3000);
      assert.ok(endedAt - changedAt <= WITHIN_MS, `ended ${endedAt - changedAt} ms after the change`);
      endedWith(stream, 'scope');
      assert.equal(await endedFor('scope'), endedBefore + 1);
    });

    it('makes watchPlants throw CredentialsEndedError once, without reconnecting', T, async () => {
      const { token, record } = await issueToken(s.store.tokens, { owner: 'watch-revoked' });
      let connects = 0;
      const client = new PlantStoreClient({
        baseUrl: s.base,
        token,
        fetch: (input, init) => {
          if (String(input).endsWith('/plants/events')) connects++;
          return fetch(input, init);
        },
      });
      const got: string[] = [];
      const watching = (async () => {
        for await (const change of client.watchPlants()) got.push(change.type);
      })();
      await delay(200);
      await client.createPlant({ id: 1n, name: 'seen' });
      while (got.length === 0) await delay(10);
      await s.store.tokens.revoke(record.id, new Date());
      const error = await Promise.race([
        watching.then(
          () => assert.fail('watchPlants ended without an error'),
          (e: unknown) => e,
        ),
        delay(3000).then(() => assert.fail('watchPlants went on after the revocation')),
      ]);
      assert.ok(error instanceof CredentialsEndedError, String(error));
      assert.equal(error.reason, 'revoked');
      assert.equal(error.status, 401);
      assert.match(error.message, /revoked/);
      assert.deepEqual(got, ['plant.created']);
      assert.equal(connects, 1, 'it did not reconnect');
    });
  },
  ['sqlite'],
);
