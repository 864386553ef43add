// The admin HTTP API on the admin listener (--admin-token-file): tokens and
// webhook endpoints managed without the database, through the CLI's own
// functions, on each store. Every request needs the admin secret (401
// otherwise, checked first); errors are the one JSON shape; /openapi.json
// describes it. Without the setting the routes do not exist.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/app/admin.js';
import { buildApp } from '../../src/app/app.js';
import { DeliveryLoop } from '../../src/outbox/delivery-loop.js';
import { ADMIN_EVENT_TYPES, ADMIN_SCOPES } from '../../src/schemas/admin.js';
import { SCOPES, WEBHOOK_EVENT_TYPES, type Store } from '../../src/store/store.js';
import pino from 'pino';
import { after, before, describe, it } from '../helpers/requirements.js';
import { runCliInProcess } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { serveInProcess } from '../helpers/serve-in-process.js';
import { adminUrlOf, httpRequest, serveArgs, stopGracefully } from '../helpers/server.js';
import { describeEachStore } from '../helpers/stores.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const SECRET = 'a'.repeat(20) + 'admin-secret-of-44-bytes-xyz';
const auth = { authorization: `Bearer ${SECRET}` };

describeEachStore('admin API', (fx) => {
  let admin: FastifyInstance;
  let plants: FastifyInstance;
  let receiver: WebhookReceiver;
  let store: Store;
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-admin-api-'));

  before(async () => {
    store = await fx.open();
    const settings = fx.config({ webhookKeyFile: join(dir, 'webhook.key'), webhooksAllowPrivate: true });
    admin = await buildAdminApp({
      logger: pino({ level: 'silent' }),
      metrics: async () => '',
      ready: async () => {},
      api: { secret: SECRET, store, settings },
    });
    // No token cache: a revoked token is refused at once (servers take up to a second).
    plants = await buildApp(fx.config({ tokenCacheMs: 0 }), { store });
    receiver = await new WebhookReceiver().start();
  });
  after(async () => {
    await admin?.close();
    await plants?.close();
    await receiver?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const call = (
    method: 'GET' | 'POST' | 'DELETE',
    url: string,
    payload?: unknown,
    headers: Record<string, string> = auth,
  ) => admin.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

  it('refuses every route without the secret, or with a wrong one (401, JSON), before anything else', async () => {
    for (const [method, url] of [
      ['GET', '/admin/tokens'],
      ['POST', '/admin/tokens'],
      ['DELETE', '/admin/tokens/tok_0'],
      ['GET', '/admin/webhooks'],
      ['POST', '/admin/webhooks/wh_0/test'],
      ['POST', '/admin/webhooks/wh_0/redeliver'],
    ] as const) {
      for (const headers of [
        {},
        { authorization: `Bearer ${SECRET}x` },
        { authorization: `Basic ${SECRET}` },
        { authorization: 'Bearer plnt_x' },
      ]) {
        const res = await admin.inject({
          method,
          url,
          headers,
          ...(method === 'POST' ? { payload: { owner: 'x' } } : {}),
        });
        assert.equal(res.statusCode, 401, `${method} ${url} ${JSON.stringify(headers)}`);
        assert.equal(res.json().error, 401);
        assert.match(res.json().message, /admin-token-file/);
        assert.ok(!res.body.includes(SECRET));
      }
    }
    assert.equal((await call('GET', '/admin/tokens?owner=nobody')).json().length, 0, 'nothing was created');
  });

  it('creates a token (201) that the plant API accepts, lists it without its secret, revokes it (204)', async () => {
    const created = await call('POST', '/admin/tokens', { owner: 'alice', scopes: ['plants:read'], expiresIn: '30d' });
    assert.equal(created.statusCode, 201, created.body);
    const body = created.json();
    assert.deepEqual(Object.keys(body).sort(), ['expiresAt', 'id', 'owner', 'scopes', 'token']);
    assert.equal(body.owner, 'alice');
    assert.deepEqual(body.scopes, ['plants:read']);
    assert.ok(Math.abs(Date.parse(body.expiresAt) - Date.now() - 30 * 86_400_000) < 60_000);
    const used = await plants.inject({
      method: 'GET',
      url: '/plants',
      headers: { authorization: `Bearer ${body.token}` },
    });
    assert.equal(used.statusCode, 200, used.body);

    const listed = await call('GET', '/admin/tokens?owner=alice');
    assert.equal(listed.statusCode, 200);
    assert.deepEqual(
      listed.json().map((t: { id: string }) => t.id),
      [body.id],
    );
    assert.ok(!listed.body.includes(body.token), 'no secret in the list');
    assert.equal(listed.json()[0].revokedAt, null);

    assert.equal((await call('DELETE', `/admin/tokens/${body.id}`)).statusCode, 204);
    assert.notEqual((await call('GET', '/admin/tokens?owner=alice')).json()[0].revokedAt, null);
    const refused = await plants.inject({
      method: 'GET',
      url: '/plants',
      headers: { authorization: `Bearer ${body.token}` },
    });
    assert.equal(refused.statusCode, 401);
    const again = await call('DELETE', `/admin/tokens/tok_ffffffffffffffff`);
    assert.equal(again.statusCode, 404);
    assert.deepEqual(again.json(), { error: 404, message: 'no token has the id "tok_ffffffffffffffff"' });
  });

  it('refuses bad input with 400 naming the field, and creates nothing', async () => {
    for (const [payload, message] of [
      [{}, /owner/],
      [{ owner: 'bad owner' }, /owner: owner must be/],
      [{ owner: 'bob', scopes: ['plants:admin'] }, /scopes/],
      [{ owner: 'bob', expiresIn: 'soon' }, /expiresIn/],
      [{ owner: 'bob', extra: 1 }, /extra|additional/i],
    ] as const) {
      const res = await call('POST', '/admin/tokens', payload);
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload)}: ${res.body}`);
      assert.equal(res.json().error, 400);
      assert.match(res.json().message, message);
    }
    const url = await call('POST', '/admin/webhooks', { owner: 'bob', url: 'ftp://x.invalid/' });
    assert.equal(url.statusCode, 400);
    assert.match(url.json().message, /^url must be an http:\/\/ or https:\/\/ URL/);
    assert.equal((await call('GET', '/admin/tokens?owner=bob')).json().length, 0);
    assert.equal((await call('GET', '/admin/webhooks?owner=bob')).json().length, 0);
  });

  it('registers a webhook (201, its secret once), lists it, sends a signed webhook.test, removes it (204)', async () => {
    const created = await call('POST', '/admin/webhooks', { owner: 'carol', url: receiver.url('/carol') });
    assert.equal(created.statusCode, 201, created.body);
    const hook = created.json();
    assert.match(hook.id, /^wh_[0-9a-f]{16}$/);
    assert.deepEqual(hook.events, [...WEBHOOK_EVENT_TYPES]);
    assert.match(hook.secret, /^whsec_/);
    assert.ok(hook.warnings.some((w: string) => /loopback/.test(w)));

    const listed = await call('GET', '/admin/webhooks?owner=carol');
    assert.deepEqual(
      listed.json().map((e: { id: string }) => e.id),
      [hook.id],
    );
    assert.ok(!listed.body.includes(hook.secret));
    assert.equal(listed.json()[0].pending, 0);

    const tested = await call('POST', `/admin/webhooks/${hook.id}/test`);
    assert.equal(tested.statusCode, 200, tested.body);
    assert.equal(tested.json().delivered, true);
    assert.equal(tested.json().status, 204);
    const got = receiver.requests.find((r) => r.path === '/carol')!;
    const event = new Webhook(hook.secret).verify(got.body, got.headers) as {
      type: string;
      data: { endpoint: string };
    };
    assert.equal(event.type, 'webhook.test');
    assert.equal(event.data.endpoint, hook.id);
    assert.equal(got.headers['webhook-id'], tested.json().messageId);

    receiver.answer = () => ({ status: 503 });
    const failed = (await call('POST', `/admin/webhooks/${hook.id}/test`)).json();
    assert.deepEqual([failed.delivered, failed.status], [false, 503]);
    receiver.answer = () => ({ status: 204 });

    assert.equal((await call('DELETE', `/admin/webhooks/${hook.id}`)).statusCode, 204);
    assert.equal((await call('GET', '/admin/webhooks?owner=carol')).json().length, 0);
    for (const url of [`/admin/webhooks/${hook.id}`, `/admin/webhooks/${hook.id}/test`]) {
      const gone = await call(url.endsWith('test') ? 'POST' : 'DELETE', url);
      assert.deepEqual(gone.json(), { error: 404, message: `no webhook endpoint has the id "${hook.id}"` });
    }
  });

  it('redelivers the deliveries that failed for good: the event reaches the receiver once it is healthy', async () => {
    const hook = (await call('POST', '/admin/webhooks', { owner: 'frank', url: receiver.url('/frank') })).json();
    const { token } = (await call('POST', '/admin/tokens', { owner: 'frank' })).json();
    // Two attempts, then given up: the whole schedule within a second.
    const loop = new DeliveryLoop({
      outbox: store.outbox,
      webhooks: store.webhooks,
      keyPath: join(dir, 'webhook.key'),
      allowPrivate: true,
      timeoutMs: 2000,
      log: pino({ level: 'silent' }),
      pollMs: 20,
      retryDelayMs: (attempt) => (attempt < 2 ? 20 : undefined),
    });
    receiver.answer = (r) => ({ status: r.path === '/frank' ? 500 : 204 });
    try {
      assert.deepEqual((await call('POST', `/admin/webhooks/${hook.id}/redeliver`)).json(), {
        id: hook.id,
        redelivered: 0,
      });
      const created = await plants.inject({
        method: 'POST',
        url: '/plants',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        payload: '{"id":9007199254740993,"name":"fern"}',
      });
      assert.equal(created.statusCode, 200, created.body);
      loop.start();
      const toFrank = () => receiver.requests.filter((r) => r.path === '/frank');
      await receiver.waitFor(() => toFrank().length === 2, 10_000, 'two failed attempts');
      // Given up: nothing waits any more, and nothing more comes.
      await eventually(async () => (await call('GET', '/admin/webhooks?owner=frank')).json()[0].pending === 0, 10_000, {
        what: 'the delivery given up',
      });
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(toFrank().length, 2, 'no attempt after the last');
      const failedId = toFrank()[0]!.headers['webhook-id'];

      receiver.answer = () => ({ status: 204 });
      const redelivered = await call('POST', `/admin/webhooks/${hook.id}/redeliver`);
      assert.equal(redelivered.statusCode, 200, redelivered.body);
      assert.deepEqual(redelivered.json(), { id: hook.id, redelivered: 1 });
      await receiver.waitFor(() => toFrank().some((r) => r.status === 204), 10_000, 'the redelivered event');
      const got = toFrank().find((r) => r.status === 204)!;
      assert.equal(got.headers['webhook-id'], failedId, 'the same webhook-id, so receivers can deduplicate');
      const event = new Webhook(hook.secret).verify(got.body, got.headers) as { type: string; data: object };
      assert.equal(event.type, 'plant.created');
      assert.match(got.body, /"id":9007199254740993[,}]/);
      await eventually(async () => (await call('GET', '/admin/webhooks?owner=frank')).json()[0].pending === 0, 10_000, {
        what: 'the delivery settled',
      });
      // Delivered now: nothing left to redeliver.
      assert.equal((await call('POST', `/admin/webhooks/${hook.id}/redeliver`)).json().redelivered, 0);
    } finally {
      await loop.stop();
      receiver.answer = () => ({ status: 204 });
    }
    const unknown = await call('POST', '/admin/webhooks/wh_ffffffffffffffff/redeliver');
    assert.equal(unknown.statusCode, 404);
    assert.deepEqual(unknown.json(), { error: 404, message: 'no webhook endpoint has the id "wh_ffffffffffffffff"' });
  });

  it('serves its OpenAPI document at /openapi.json', async () => {
    const res = await admin.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const doc = res.json();
    assert.equal(doc.openapi, '3.1.0');
    assert.deepEqual(Object.keys(doc.paths).sort(), [
      '/admin/tokens',
      '/admin/tokens/{id}',
      '/admin/webhooks',
      '/admin/webhooks/{id}',
      '/admin/webhooks/{id}/redeliver',
      '/admin/webhooks/{id}/test',
    ]);
    assert.ok(doc.paths['/admin/webhooks/{id}/redeliver'].post.responses['200']);
    assert.deepEqual(Object.keys(doc.paths['/admin/tokens/{id}']), ['delete']);
    assert.ok(doc.paths['/admin/tokens'].post.responses['201']);
  });
});

describe('the admin API as serve runs it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-admin-serve-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const db = join(dir, 'plants.db');
  const secretFile = join(dir, 'admin.secret');

  it('the schemas name the store scopes and event types', () => {
    assert.deepEqual([...ADMIN_SCOPES], [...SCOPES]);
    assert.deepEqual([...ADMIN_EVENT_TYPES], [...WEBHOOK_EVENT_TYPES]);
  });

  it('refuses a short secret, a missing file, and the file without --admin-port (exit 2)', async () => {
    writeFileSync(secretFile, 'too-short\n', { mode: 0o600 });
    const short = await runCliInProcess(['serve', '--db', db, '--admin-port', '0', '--admin-token-file', secretFile]);
    assert.equal(short.code, 2);
    assert.match(
      short.stderr,
      /^plant-store serve: --admin-token-file: .* must hold a secret of at least 32 bytes, not 9/,
    );
    const missing = await runCliInProcess([
      'serve',
      '--db',
      db,
      '--admin-port',
      '0',
      '--admin-token-file',
      join(dir, 'none'),
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--admin-token-file: cannot read .*none \(no such file\)/);
    writeFileSync(secretFile, `${SECRET}\n`);
    const noPort = await runCliInProcess(['serve', '--db', db, '--admin-token-file', secretFile]);
    assert.equal(noPort.code, 2);
    assert.match(noPort.stderr, /--admin-token-file needs --admin-port/);
  });

  it('plant-store webhook test ID sends the same signed webhook.test event; exit 1 when not delivered', async () => {
    const receiver = await new WebhookReceiver().start();
    try {
      assert.equal((await runCliInProcess(['migrate', '--db', db])).code, 0);
      const added = await runCliInProcess([
        'webhook',
        'add',
        '--owner',
        'erin',
        '--url',
        receiver.url('/e'),
        '--db',
        db,
        '--json',
      ]);
      assert.equal(added.code, 0, added.stderr);
      const { id, secret } = JSON.parse(added.stdout) as { id: string; secret: string };
      const blocked = await runCliInProcess(['webhook', 'test', id, '--db', db]);
      assert.equal(blocked.code, 1);
      assert.match(
        blocked.stderr,
        /^plant-store webhook test: not delivered: refused: 127\.0\.0\.1, a loopback address/,
      );
      const sent = await runCliInProcess(['webhook', 'test', id, '--db', db, '--webhooks-allow-private']);
      assert.equal(sent.code, 0, sent.stderr);
      assert.match(sent.stderr, /^delivered msg_[0-9a-f]{32}: the receiver answered 204\n$/);
      const got = receiver.requests[0]!;
      assert.equal((new Webhook(secret).verify(got.body, got.headers) as { type: string }).type, 'webhook.test');
      const unknown = await runCliInProcess(['webhook', 'test', 'wh_0000000000000000', '--db', db]);
      assert.equal(unknown.code, 1);
      assert.equal(unknown.stderr, 'plant-store webhook test: no webhook endpoint has the id "wh_0000000000000000"\n');
    } finally {
      await receiver.stop();
    }
  });

  it('plant-store webhook redeliver ID says how many failed deliveries it queued again; exit 1 for no such id', async () => {
    assert.equal((await runCliInProcess(['migrate', '--db', db])).code, 0);
    const added = await runCliInProcess([
      'webhook',
      'add',
      '--owner',
      'gina',
      '--url',
      'https://hooks.invalid/g',
      '--db',
      db,
      '--json',
    ]);
    assert.equal(added.code, 0, added.stderr);
    const { id } = JSON.parse(added.stdout) as { id: string };
    const none = await runCliInProcess(['webhook', 'redeliver', id, '--db', db]);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stderr, `0 failed deliveries of ${id} queued again\n`);
    const json = await runCliInProcess(['webhook', 'redeliver', id, '--db', db, '--json']);
    assert.deepEqual(JSON.parse(json.stdout), { id, redelivered: 0 });
    const unknown = await runCliInProcess(['webhook', 'redeliver', 'wh_0000000000000000', '--db', db]);
    assert.equal(unknown.code, 1);
    assert.equal(
      unknown.stderr,
      'plant-store webhook redeliver: no webhook endpoint has the id "wh_0000000000000000"\n',
    );
    const two = await runCliInProcess(['webhook', 'redeliver', id, id, '--db', db]);
    assert.equal(two.code, 2);
  });

  it('on the admin listener only, and only with --admin-token-file', async () => {
    writeFileSync(secretFile, `${SECRET}\n`);
    const server = await serveInProcess(serveArgs(db, '--admin-port', '0', '--admin-token-file', secretFile));
    const plain = await serveInProcess(serveArgs(db, '--admin-port', '0'));
    try {
      const adminUrl = await adminUrlOf(server);
      const created = await httpRequest(`${adminUrl}/admin/tokens`, {
        method: 'POST',
        json: { owner: 'dave' },
        headers: auth,
      });
      assert.equal(created.status, 201, created.body);
      const { token } = JSON.parse(created.body) as { token: string };
      assert.equal(
        (await httpRequest(`${server.url}/plants`, { token })).status,
        200,
        'the token works on the public port',
      );
      const onPublic = await httpRequest(`${server.url}/admin/tokens`, { headers: auth });
      // The public port knows no such secret: the plant API's own 401, checked before any route.
      assert.equal(onPublic.status, 401, 'not on the public port');
      assert.doesNotMatch(onPublic.body, /admin-token-file/);
      const without = await httpRequest(`${await adminUrlOf(plain)}/admin/tokens`, { headers: auth });
      assert.equal(without.status, 404, 'no routes without --admin-token-file');
      assert.ok(!(server.stdout + server.stderr).includes(SECRET), 'the secret is never logged');
    } finally {
      await stopGracefully(server, plain);
    }
  });
});
