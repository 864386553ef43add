// With tracing off (no endpoint, or OTEL_SDK_DISABLED), what the bench's
// claim that it costs nothing rests on: no tracing is started and the app
// gets none of the request span's hooks. With an endpoint set, the same app
// gets them.
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app/app.js';
import { loadConfig } from '../../src/config.js';
import { startTracing, stopTracing } from '../../src/tracing/start.js';
import { tracing } from '../../src/tracing/tracing.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { it } from '../helpers/requirements.js';

// The names of the hooks app/request-spans.ts adds.
const SPAN_HOOKS = ['startSpan', 'inSpan', 'answered'];

/** The request hooks of every route, by name, as Fastify lists them. */
const hookNames = (app: FastifyInstance): string[] =>
  [...app.printRoutes({ includeHooks: true, commonPrefix: false }).matchAll(/"(\w+)\(\)"/g)].map((m) => m[1]!);

describeHttpLayer('tracing off adds nothing to a request', (fx) => {
  const built = async (env: Record<string, string>): Promise<string[]> => {
    const { otelExporterOtlpEndpoint: endpoint, otelSdkDisabled } = loadConfig({}, env);
    const config = fx.config({
      otelSdkDisabled,
      ...(endpoint !== undefined && { otelExporterOtlpEndpoint: endpoint }),
    });
    await startTracing(config, '0.0.0', env);
    const store = await fx.open();
    const app = await buildApp(config, { store });
    try {
      await app.ready();
      return hookNames(app);
    } finally {
      await app.close();
      await stopTracing();
    }
  };

  it('no endpoint: none of the span hooks, and no tracing started', async () => {
    const names = await built({});
    assert.ok(names.length > 0, 'Fastify lists the hooks by name');
    for (const hook of SPAN_HOOKS) assert.ok(!names.includes(hook), `${hook} with tracing off`);
    assert.equal(tracing(), undefined);
  });

  it('OTEL_SDK_DISABLED=true with an endpoint: none either', async () => {
    const names = await built({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_SDK_DISABLED: 'true' });
    for (const hook of SPAN_HOOKS) assert.ok(!names.includes(hook), `${hook} with the SDK disabled`);
  });

  it('an endpoint set: every route gets them', async () => {
    const names = await built({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    for (const hook of SPAN_HOOKS) assert.ok(names.includes(hook), `${hook} missing with tracing on`);
  });
});
