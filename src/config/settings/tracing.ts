import { Type } from '@sinclair/typebox';
import { OTLP_PROTOCOLS, TRACE_SAMPLERS, type SettingSpec } from '../setting-spec.js';

// OpenTelemetry's own variables (the SDK's environment specification), so
// that a collector's or a platform's settings apply unchanged; the flags are
// those variables in lower case. --trace-owner is the service's own.

/** OpenTelemetry traces, sent over OTLP/HTTP; off while no endpoint is set. */
export const TRACING = {
  'otel-exporter-otlp-endpoint': {
    group: 'tracing',
    env: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    default: '',
    arg: 'URL',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'base URL of an OTLP/HTTP receiver (a collector): traces go to URL/v1/traces; unset (and no traces endpoint): no tracing',
  },
  'otel-exporter-otlp-traces-endpoint': {
    group: 'tracing',
    env: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    default: '',
    arg: 'URL',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'the full URL traces are posted to, used as it is; wins over --otel-exporter-otlp-endpoint',
  },
  'otel-exporter-otlp-protocol': {
    group: 'tracing',
    env: 'OTEL_EXPORTER_OTLP_PROTOCOL',
    default: 'http/protobuf',
    arg: 'PROTOCOL',
    schema: Type.Union(OTLP_PROTOCOLS.map((p) => Type.Literal(p))),
    help: 'http/protobuf or http/json (grpc is not supported)',
  },
  'otel-service-name': {
    group: 'tracing',
    env: 'OTEL_SERVICE_NAME',
    default: '',
    arg: 'NAME',
    schema: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    help: 'service.name of every span; unset: service.name of --otel-resource-attributes, else plant-store',
  },
  'otel-traces-sampler': {
    group: 'tracing',
    env: 'OTEL_TRACES_SAMPLER',
    default: 'parentbased_always_on',
    arg: 'SAMPLER',
    schema: Type.Union(TRACE_SAMPLERS.map((s) => Type.Literal(s))),
    help: `which requests are traced: ${TRACE_SAMPLERS.join(', ')}; parentbased_ ones follow an incoming traceparent's choice`,
  },
  'otel-traces-sampler-arg': {
    group: 'tracing',
    env: 'OTEL_TRACES_SAMPLER_ARG',
    default: '',
    arg: 'RATIO',
    schema: Type.Optional(Type.String({ minLength: 1 })),
    help: 'the share of traces the traceidratio samplers keep, from 0 to 1; unset: 1',
  },
  'otel-resource-attributes': {
    group: 'tracing',
    env: 'OTEL_RESOURCE_ATTRIBUTES',
    default: '',
    arg: 'K=V,…',
    schema: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    help: 'attributes of the service on every span, such as deployment.environment.name=prod,service.namespace=shop (values percent-encoded)',
  },
  'otel-sdk-disabled': {
    group: 'tracing',
    env: 'OTEL_SDK_DISABLED',
    default: 'false',
    arg: '',
    schema: Type.Boolean(),
    help: 'no tracing, whatever the endpoint: the OpenTelemetry SDK is not even loaded',
  },
  'trace-owner': {
    group: 'tracing',
    env: 'PLANTS_TRACE_OWNER',
    default: 'false',
    arg: '',
    schema: Type.Boolean(),
    help: "put the caller's owner in each request span (user.id); off, spans carry no owner",
  },
} as const satisfies Record<string, SettingSpec>;
