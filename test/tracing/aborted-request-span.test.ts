// A request whose client goes away still gets a finished server span: one
// closed before its answer (here, while its body was still coming) is ended
// as aborted (error.type, an error status, no status code); a live-events
// stream the client closes is ended with its 200, not as an error.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/requirements.js';
import { OtlpReceiver, SERVER } from '../helpers/otlp-receiver.js';
import {
  cliToken,
  delay,
  migrateWithCli,
  serveArgs,
  startServer,
  stopGracefully,
  type ServerProcess,
} from '../helpers/server.js';

const dir = mkdtempSync(join(tmpdir(), 'plant-store-abort-'));
const db = join(dir, 'plants.db');
let otlp: OtlpReceiver;
let server: ServerProcess;
let token: string;

before(async () => {
  otlp = await new OtlpReceiver().start();
  await migrateWithCli(db);
  token = await cliToken(db, 'alice');
  server = await startServer(serveArgs(db), {
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
});

after(async () => {
  await stopGracefully(server);
  await otlp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends `head` (and what follows it) on a connection of its own, waits `ms`, and closes it. */
async function sendAndClose(text: string, ms: number): Promise<string> {
  const socket = connect(server.port, '127.0.0.1');
  let got = '';
  socket.setEncoding('utf8').on('data', (d: string) => (got += d));
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write(text);
  await delay(ms);
  socket.destroy();
  return got;
}

const traceparent = (traceId: string) => `traceparent: 00-${traceId}-b7ad6b7169203331-01\r\n`;

describe('requests their client leaves', () => {
  it('a create closed while its body is coming ends its span as aborted', async () => {
    const traceId = 'abababababababababababababab0001';
    const got = await sendAndClose(
      'POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
        `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n` +
        `${traceparent(traceId)}\r\n{"id": 7, "na`,
      300,
    );
    assert.equal(got, '', 'no answer was sent');
    const span = await otlp.waitForSpan((s) => s.kind === SERVER && s.traceId === traceId, 'of the aborted create');
    assert.equal(span.name, 'POST /plants');
    assert.equal(span.attributes['error.type'], 'aborted');
    assert.equal(span.status, 2, 'an error status');
    assert.equal(span.attributes['http.response.status_code'], undefined, 'no status was sent');
  });

  it('a live-events stream the client closes ends its span with 200, not as an error', async () => {
    const traceId = 'abababababababababababababab0002';
    const got = await sendAndClose(
      `GET /plants/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n${traceparent(traceId)}\r\n`,
      500,
    );
    assert.match(got, /^HTTP\/1\.1 200/);
    const span = await otlp.waitForSpan((s) => s.kind === SERVER && s.traceId === traceId, 'of the closed stream');
    assert.equal(span.name, 'GET /plants/events');
    assert.equal(span.attributes['http.response.status_code'], 200);
    assert.equal(span.attributes['error.type'], undefined);
    assert.equal(span.status, 0);
  });
});
