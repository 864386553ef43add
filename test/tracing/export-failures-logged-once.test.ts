// A receiver that refuses every export (500), or a port where none listens:
// the SDK's error reaches the service's log as one warn line, not one per
// export, with the endpoint's password and the OTLP header values masked;
// and a receiver still down at shutdown does not fail the exit.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import { OtlpReceiver } from '../helpers/otlp-receiver.js';
import {
  cliToken,
  delay,
  httpRequest,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  type ServerProcess,
} from '../helpers/server.js';

const PASSWORD = 'Pw5ecretForOtlp';
const HEADER_VALUE = 'Hdr5ecretValue42';
const dir = mkdtempSync(join(tmpdir(), 'plant-store-otlp-down-'));
const db = join(dir, 'plants.db');
let token: string;

before(async () => {
  await migrateWithCli(db);
  token = await cliToken(db, 'alice');
});
after(() => rmSync(dir, { recursive: true, force: true }));

/** A server exporting to `base` (with a user and password in it), batches every 100 ms. */
const tracedServer = (base: string) =>
  startServer(serveArgs(db), {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: base.replace('http://', `http://otel:${PASSWORD}@`),
      OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${HEADER_VALUE}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: '500',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });

const tracingLines = (server: ServerProcess) =>
  server.logLines().filter((l) => typeof l.msg === 'string' && l.msg.startsWith('tracing:'));

function assertNoSecret(server: ServerProcess): void {
  for (const secret of [PASSWORD, HEADER_VALUE]) {
    assert.ok(!server.stdout.includes(secret), `${secret} in the log`);
    assert.ok(!server.stderr.includes(secret), `${secret} on stderr`);
  }
}

/** Requests, each in an export of its own, until `enough` says so. */
async function requestUntil(server: ServerProcess, enough: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!enough()) {
    if (Date.now() > deadline) assert.fail('not enough exports within the time');
    assert.equal((await httpRequest(`${server.url}/plants?limit=1`, { token })).status, 200);
    await delay(200);
  }
}

describe('export failures', () => {
  it('a receiver answering 500 to every export gets one warn line, masked', async () => {
    const otlp = await new OtlpReceiver({ refuseWith: 500 }).start();
    const server = await tracedServer(otlp.endpoint);
    try {
      await requestUntil(server, () => otlp.refused >= 5);
      await delay(500);
      const lines = tracingLines(server);
      assert.equal(lines.length, 1, JSON.stringify(lines));
      const [line] = lines;
      assert.equal(line!.level, 40, 'warn');
      assert.equal(line!.trace_id, undefined, 'the line names no request span');
      assert.match(String(line!.msg), /OTLPExporterError: Internal Server Error \(code 500\)/);
      assert.match(String(line!.msg), /the receiver answered: collector unavailable for \*\*\*/);
      assert.equal(line!.tracesEndpoint, `${otlp.endpoint.replace('http://', 'http://***@')}/v1/traces`);
      assertNoSecret(server);
    } finally {
      await stopGracefully(server);
      await otlp.stop();
    }
  });

  it('no receiver at all: one warn line while it stays down, and a clean exit', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const server = await tracedServer(`http://127.0.0.1:${port}`);
    let refusedSince = 0;
    try {
      await requestUntil(server, () => tracingLines(server).length > 0);
      // Several exports more, each refused again.
      const start = Date.now();
      await requestUntil(server, () => Date.now() - start > 2000);
      refusedSince = tracingLines(server).length;
      const [line] = tracingLines(server);
      assert.match(String(line!.msg), /ECONNREFUSED/);
      assert.equal(line!.level, 40);
    } finally {
      server.kill('SIGTERM');
    }
    const { code } = await server.waitExit(15_000);
    assert.equal(refusedSince, 1, JSON.stringify(tracingLines(server)));
    assert.equal(code, 0, 'the exit is not failed by the receiver being down');
    assertNoSecret(server);
  });
});
