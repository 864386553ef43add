// With --trace-owner the request span carries the caller's owner (user.id),
// here over the default protocol, http/protobuf; and with OTEL_SDK_DISABLED=true
// an endpoint makes no spans at all and log lines name none.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import { OtlpReceiver, SERVER } from '../helpers/otlp-receiver.js';
import {
  cliToken,
  delay,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
} from '../helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-trace-owner-'));
const db = join(dir, 'plants.db');
let otlp: OtlpReceiver;
let token: string;

before(async () => {
  otlp = await new OtlpReceiver().start();
  await migrateWithCli(db);
  token = await cliToken(db, 'bob');
});
after(async () => {
  await otlp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const env = () => ({ OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' });

describe('the owner in spans', () => {
  it('--trace-owner puts the owner in the request span (http/protobuf, the default)', async () => {
    const server = await startServer(serveArgs(db, '--trace-owner'), { env: env() });
    try {
      assert.equal((await httpRequest(`${server.url}/plants?limit=3`, { token })).status, 200);
      const span = await otlp.waitForSpan((s) => s.kind === SERVER && s.name === 'GET /plants', 'of the list');
      assert.equal(span.attributes['user.id'], 'bob');
      assert.equal(span.attributes['http.response.status_code'], 200);
      assert.equal(span.resource['service.name'], 'plant-store');
      assert.ok(otlp.contentTypes.length > 0 && otlp.contentTypes.every((t) => t === 'application/x-protobuf'));
    } finally {
      await stopGracefully(server);
    }
  });

  it('OTEL_SDK_DISABLED=true: no spans are sent, and log lines carry no trace_id', async () => {
    const before = otlp.contentTypes.length;
    const server = await startServer(serveArgs(db, '--access-log'), {
      env: { ...env(), OTEL_SDK_DISABLED: 'true' },
    });
    try {
      assert.equal((await httpRequest(`${server.url}/plants?limit=3`, { token })).status, 200);
      await server.waitForOutput((out) => out.includes('request completed'));
      // Ten times the batch delay of a server that would send.
      await delay(1000);
      assert.equal(otlp.contentTypes.length, before, 'nothing was posted to the receiver');
      const line = server.logLines().find((l) => l.msg === 'request completed');
      assert.ok(line);
      assert.equal('trace_id' in line, false);
    } finally {
      await stopGracefully(server);
    }
  });
});
