// The tracing settings: OpenTelemetry's own variables, with flags and
// configuration-file keys beside them; off unless an endpoint is set; bad
// values refused at start, naming where they came from.
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import {
  ConfigError,
  loadConfig,
  parseConfigFile,
  resourceAttributes,
  tracesUrl,
  tracingEnabled,
} from '../../src/config.js';

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  assert.fail('accepted');
}

describe('tracing settings', () => {
  it('off by default, and with OTEL_SDK_DISABLED=true whatever the endpoint', () => {
    assert.equal(tracingEnabled(loadConfig({}, {})), false);
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    assert.equal(tracingEnabled(loadConfig({}, env)), true);
    assert.equal(tracingEnabled(loadConfig({}, { ...env, OTEL_SDK_DISABLED: 'true' })), false);
    assert.equal(tracingEnabled(loadConfig({ 'otel-sdk-disabled': 'true' }, env)), false);
  });

  it('the traces endpoint is used as it is; the base endpoint gets v1/traces', () => {
    assert.equal(
      tracesUrl(loadConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })),
      'http://c:4318/v1/traces',
    );
    assert.equal(
      tracesUrl(loadConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/x/' })),
      'http://c:4318/x/v1/traces',
    );
    const both = {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://t/traces',
    };
    assert.equal(tracesUrl(loadConfig({}, both)), 'http://t/traces');
  });

  it('flag, then variable, then the configuration file', () => {
    const file = parseConfigFile(
      'plants.json',
      JSON.stringify({ 'otel-service-name': 'from-file', 'otel-traces-sampler': 'traceidratio' }),
    );
    assert.equal(loadConfig({}, {}, {}, undefined, file).otelServiceName, 'from-file');
    assert.equal(loadConfig({}, { OTEL_SERVICE_NAME: 'from-env' }, {}, undefined, file).otelServiceName, 'from-env');
    const flagged = loadConfig(
      { 'otel-service-name': 'from-flag' },
      { OTEL_SERVICE_NAME: 'from-env' },
      {},
      undefined,
      file,
    );
    assert.equal(flagged.otelServiceName, 'from-flag');
    assert.equal(loadConfig({}, {}, {}, undefined, file).otelTracesSampler, 'traceidratio');
    assert.equal(loadConfig({}, {}).otelExporterOtlpProtocol, 'http/protobuf');
    assert.equal(loadConfig({}, {}).otelTracesSampler, 'parentbased_always_on');
  });

  it('resource attributes are key=value pairs, values percent-decoded', () => {
    assert.deepEqual(resourceAttributes('a=1, b = x%2Cy ,,c='), { a: '1', b: 'x,y', c: '' });
  });

  it('bad values are refused, naming the variable or flag', () => {
    assert.match(
      refusal(() => loadConfig({}, { OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })),
      /^OTEL_EXPORTER_OTLP_PROTOCOL must be one of http\/protobuf, http\/json, got "grpc"/,
    );
    assert.match(
      refusal(() => loadConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317' })),
      /^OTEL_EXPORTER_OTLP_ENDPOINT must be an http:\/\/ or https:\/\/ URL/,
    );
    assert.match(
      refusal(() => loadConfig({ 'otel-traces-sampler-arg': '1.5' }, {})),
      /^--otel-traces-sampler-arg must be a number from 0 to 1, got "1.5"/,
    );
    assert.match(
      refusal(() => loadConfig({}, { OTEL_TRACES_SAMPLER: 'jaeger_remote' })),
      /^OTEL_TRACES_SAMPLER must be one of parentbased_always_on, /,
    );
    assert.match(
      refusal(() => loadConfig({}, { OTEL_RESOURCE_ATTRIBUTES: 'team' })),
      /^OTEL_RESOURCE_ATTRIBUTES: each attribute must be key=value, got "team"/,
    );
    assert.match(
      refusal(() => loadConfig({}, { OTEL_RESOURCE_ATTRIBUTES: 'a=%zz' })),
      /^OTEL_RESOURCE_ATTRIBUTES: the value of a is not valid percent-encoding/,
    );
  });
});
