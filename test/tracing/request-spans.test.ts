// A real server with tracing on (http/json to a loopback OTLP receiver): one
// server span per request with the route template, method and status; an
// incoming traceparent continued; the SQLite write a child span; a webhook
// delivery a client span whose traceparent the receiver gets; the access line
// naming the span; no owner and no token in any span without --trace-owner.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import { runCliInProcess } from '../helpers/cli.js';
import { CLIENT, INTERNAL, OtlpReceiver, SERVER } from '../helpers/otlp-receiver.js';
import {
  cliToken,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  type ServerProcess,
} from '../helpers/server.js';
import { WebhookReceiver } from '../helpers/webhook-receiver.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-tracing-'));
const db = join(dir, 'plants.db');
const keyPath = join(dir, 'webhook.key');
const PARENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const PARENT_SPAN = 'b7ad6b7169203331';

let otlp: OtlpReceiver;
let hooks: WebhookReceiver;
let server: ServerProcess;
let token: string;

before(async () => {
  otlp = await new OtlpReceiver().start();
  hooks = await new WebhookReceiver().start();
  await migrateWithCli(db);
  token = await cliToken(db, 'alice');
  const added = await runCliInProcess(
    ['webhook', 'add', '--owner', 'alice', '--url', hooks.url(), '--db', db, '--webhook-key-file', keyPath],
    {},
  );
  assert.equal(added.code, 0, added.stderr);
  server = await startServer(serveArgs(db, '--access-log', '--webhooks-allow-private', '--webhook-key-file', keyPath), {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'plants-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test,team=green%20house',
      // The SDK reads its batch delay itself: spans go out within 100 ms.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
});

after(async () => {
  await stopGracefully(server);
  await otlp?.stop();
  await hooks?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const create = (id: number, headers: Record<string, string> = {}) =>
  httpRequest(`${server.url}/plants`, {
    method: 'POST',
    token,
    headers,
    json: { id, name: `fern ${id}` },
  });

describe('request spans', () => {
  it('a create continues the incoming traceparent, with the SQLite write a child span', async () => {
    const res = await create(1, { traceparent: `00-${PARENT_TRACE}-${PARENT_SPAN}-01` });
    assert.equal(res.status, 200);
    const span = await otlp.waitForSpan((s) => s.kind === SERVER && s.traceId === PARENT_TRACE, 'of the create');
    assert.equal(span.name, 'POST /plants');
    assert.equal(span.parentSpanId, PARENT_SPAN);
    assert.equal(span.attributes['http.request.method'], 'POST');
    assert.equal(span.attributes['http.route'], '/plants');
    assert.equal(span.attributes['url.path'], '/plants');
    assert.equal(span.attributes['http.response.status_code'], 200);
    assert.equal(span.status, 0);
    assert.equal(span.resource['service.name'], 'plants-under-test');
    assert.equal(span.resource['deployment.environment.name'], 'test');
    assert.equal(span.resource.team, 'green house');
    const write = await otlp.waitForSpan((s) => s.parentSpanId === span.spanId, 'under the create');
    assert.equal(write.kind, INTERNAL);
    assert.equal(write.name, 'sqlite create');
    assert.equal(write.traceId, PARENT_TRACE);
    assert.equal(write.attributes['db.system.name'], 'sqlite');
    assert.ok(
      otlp.contentTypes.every((t) => t === 'application/json'),
      otlp.contentTypes.join(),
    );
  });

  it('the route template, not the path, names a span; a 404 and a 401 are not errors', async () => {
    assert.equal((await httpRequest(`${server.url}/plants/999`, { token })).status, 404);
    assert.equal((await httpRequest(`${server.url}/plants?limit=5`)).status, 401);
    const missing = await otlp.waitForSpan((s) => s.attributes['url.path'] === '/plants/999', 'of GET /plants/999');
    assert.equal(missing.name, 'GET /plants/:id');
    assert.equal(missing.attributes['http.route'], '/plants/:id');
    assert.equal(missing.attributes['http.response.status_code'], 404);
    assert.equal(missing.status, 0);
    assert.equal(missing.parentSpanId, '', 'a request without traceparent starts a trace');
    const refused = await otlp.waitForSpan(
      (s) => s.kind === SERVER && s.attributes['http.response.status_code'] === 401,
      'of the refused list',
    );
    assert.equal(refused.name, 'GET /plants');
    assert.equal(refused.attributes['url.path'], '/plants', 'the query is not recorded');
    assert.equal(refused.status, 0);
  });

  it('the access line carries the trace_id and span_id of its request span', async () => {
    const traceId = 'aaaabbbbccccddddeeeeffff00001111';
    assert.equal((await create(2, { traceparent: `00-${traceId}-1111222233334444-01` })).status, 200);
    const span = await otlp.waitForSpan((s) => s.kind === SERVER && s.traceId === traceId, 'of the second create');
    await server.waitForOutput((out) => out.includes(span.spanId));
    const line = server.logLines().find((l) => l.msg === 'request completed' && l.trace_id === traceId);
    assert.ok(line, 'an access line with the trace id');
    assert.equal(line.span_id, span.spanId);
  });

  it('a webhook delivery is a client span, and the receiver gets its traceparent', async () => {
    await hooks.waitFor((rs) => rs.length >= 1, 15_000, 'a delivery');
    const parent = hooks.requests[0]!.headers.traceparent;
    assert.match(parent ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, traceId, spanId] = parent!.split('-');
    const delivery = await otlp.waitForSpan((s) => s.spanId === spanId, 'of the delivery');
    assert.equal(delivery.traceId, traceId);
    assert.equal(delivery.kind, CLIENT);
    assert.equal(delivery.name, 'POST');
    assert.equal(delivery.attributes['server.address'], '127.0.0.1');
    assert.equal(delivery.attributes['http.response.status_code'], 204);
    assert.equal(JSON.stringify(delivery.attributes).includes('/hook'), false, 'no path of the endpoint URL');
  });

  it('without --trace-owner no span carries the owner, and none the token', async () => {
    await otlp.waitForSpan((s) => s.kind === SERVER && s.attributes['http.response.status_code'] === 401, 'any');
    const text = JSON.stringify(otlp.spans);
    assert.equal(text.includes('alice'), false, 'owner in a span');
    assert.equal(text.includes(token), false, 'token in a span');
    assert.equal(text.includes('plnt_'), false, 'part of a token in a span');
    assert.ok(otlp.spans.every((s) => !('user.id' in s.attributes)));
  });
});
