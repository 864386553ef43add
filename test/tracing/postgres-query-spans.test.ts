// On PostgreSQL each query a request makes (the token lookup, the insert) is
// a client span under the request's server span.
import assert from 'node:assert/strict';
import { after, before, it } from '../helpers/requirements.js';
import { CLIENT, OtlpReceiver, SERVER } from '../helpers/otlp-receiver.js';
import { cliToken, httpRequest, migrateWithCli, serveArgs, startServer, stopGracefully } from '../helpers/server.js';
import { describeOnStore } from '../helpers/stores.js';

describeOnStore('postgres', 'PostgreSQL query spans', (fx) => {
  let otlp: OtlpReceiver;
  before(async () => {
    otlp = await new OtlpReceiver().start();
  });
  after(async () => otlp?.stop());

  it('the queries of a create are client spans of its request span', async () => {
    await migrateWithCli(fx.db);
    const token = await cliToken(fx.db, 'carol');
    const server = await startServer(serveArgs(fx.db), {
      env: {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.endpoint}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    });
    try {
      const res = await httpRequest(`${server.url}/plants`, { method: 'POST', token, json: { id: 7, name: 'moss' } });
      assert.equal(res.status, 200, res.body);
      const span = await otlp.waitForSpan((s) => s.kind === SERVER && s.name === 'POST /plants', 'of the create');
      const insert = await otlp.waitForSpan(
        (s) => s.parentSpanId === span.spanId && s.attributes['db.system.name'] === 'postgresql',
        'of a query under the create',
      );
      assert.equal(insert.kind, CLIENT);
      assert.equal(insert.traceId, span.traceId);
      assert.match(String(insert.attributes['db.query.text']), /\S/);
      assert.equal(insert.name, insert.attributes['db.operation.name']);
      const queries = otlp.spans.filter((s) => s.parentSpanId === span.spanId);
      assert.ok(
        queries.some((q) => /INSERT/i.test(String(q.attributes['db.query.text']))),
        queries.map((q) => q.name).join(),
      );
    } finally {
      await stopGracefully(server);
    }
  });
});
