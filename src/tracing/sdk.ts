import { context, propagation, trace } from '@opentelemetry/api';
import { hostDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  NodeTracerProvider,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
} from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { resourceAttributes, samplerRatio, tracesUrl, type Config } from '../config.js';
import { apiTracing } from './spans.js';
import type { Tracing } from './tracing.js';

// Imported only when tracing is on (start.ts).

/** OTEL_TRACES_SAMPLER's sampler, built from the SDK's own. */
function sampler(config: Readonly<Config>): Sampler {
  const ratio = () => new TraceIdRatioBasedSampler(samplerRatio(config));
  switch (config.otelTracesSampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio();
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio() });
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
  }
}

/**
 * The exporter of OTEL_EXPORTER_OTLP_PROTOCOL, imported alone. The URL is
 * given; the exporter itself reads the rest of its environment
 * (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION and their _TRACES_ forms).
 */
async function exporter(config: Readonly<Config>) {
  const url = tracesUrl(config)!;
  if (config.otelExporterOtlpProtocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter({ url });
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter({ url });
}

/**
 * The SDK's tracer provider, registered for the process: the context of
 * AsyncLocalStorage (a span started in a request is active in what the
 * request awaits) and the propagators of OTEL_PROPAGATORS (W3C trace context
 * and baggage by default). The batch processor reads OTEL_BSP_* itself.
 * The resource is the host's (not the process's: its command line may hold
 * a database URL), the attributes of OTEL_RESOURCE_ATTRIBUTES, and
 * service.name and service.version.
 */
export async function startSdk(config: Readonly<Config>, serviceVersion: string): Promise<Tracing> {
  const attributes = resourceAttributes(config.otelResourceAttributes) as Record<string, string>;
  const resource = detectResources({ detectors: [hostDetector] }).merge(
    resourceFromAttributes({
      ...attributes,
      [ATTR_SERVICE_NAME]: config.otelServiceName ?? attributes[ATTR_SERVICE_NAME] ?? 'plant-store',
      [ATTR_SERVICE_VERSION]: serviceVersion,
    }),
  );
  const provider = new NodeTracerProvider({
    resource,
    sampler: sampler(config),
    spanProcessors: [new BatchSpanProcessor(await exporter(config))],
  });
  provider.register();
  return apiTracing(provider.getTracer('plant-store', serviceVersion), config.traceOwner, async () => {
    await provider.shutdown();
    // So that a server started again in the same process (the CLI in tests) can register its own.
    trace.disable();
    context.disable();
    propagation.disable();
  });
}
