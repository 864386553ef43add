import type { Rule } from '../rule.js';
import { ConfigError, type Config } from '../schema.js';

type TracingSettings = Pick<
  Config,
  | 'otelExporterOtlpEndpoint'
  | 'otelExporterOtlpTracesEndpoint'
  | 'otelSdkDisabled'
  | 'otelResourceAttributes'
  | 'otelTracesSamplerArg'
>;

/** Whether spans are made and sent: an endpoint is set and OTEL_SDK_DISABLED is not true. */
export function tracingEnabled(config: TracingSettings): boolean {
  return (
    !config.otelSdkDisabled &&
    (config.otelExporterOtlpTracesEndpoint !== undefined || config.otelExporterOtlpEndpoint !== undefined)
  );
}

/**
 * Where spans are posted: the traces endpoint as it is, else the base
 * endpoint with v1/traces appended, as the OTLP exporter specification says.
 */
export function tracesUrl(config: TracingSettings): string | undefined {
  if (config.otelExporterOtlpTracesEndpoint !== undefined) return config.otelExporterOtlpTracesEndpoint;
  const base = config.otelExporterOtlpEndpoint;
  return base === undefined ? undefined : `${base.endsWith('/') ? base : `${base}/`}v1/traces`;
}

/**
 * OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, values
 * percent-encoded. Read here rather than by the SDK's environment detector,
 * since the value may come from a flag or the file too, and a malformed one
 * is refused at start instead of dropped without a word.
 */
export function resourceAttributes(text: string | undefined): Record<string, string> | string {
  const out: Record<string, string> = {};
  if (text === undefined) return out;
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = pair.slice(0, eq).trim();
    if (eq < 1 || key === '') return `each attribute must be key=value, got "${pair.slice(0, 100)}"`;
    try {
      out[key] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      return `the value of ${key.slice(0, 100)} is not valid percent-encoding`;
    }
  }
  return out;
}

/** The traceidratio samplers' ratio: OTEL_TRACES_SAMPLER_ARG, 1 when unset. */
export const samplerRatio = (config: TracingSettings): number =>
  config.otelTracesSamplerArg === undefined ? 1 : Number(config.otelTracesSamplerArg);

function checkEndpoint(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:')
    return 'must be an http:// or https:// URL (OTLP/HTTP; grpc is not supported)';
  return undefined;
}

export const tracingRule: Rule = {
  about: 'the OTLP endpoints, the sampler ratio and the resource attributes',
  check(config, { label }) {
    for (const key of ['otelExporterOtlpEndpoint', 'otelExporterOtlpTracesEndpoint'] as const) {
      const problem = checkEndpoint(config[key]);
      if (problem) throw new ConfigError(`${label(key)} ${problem}`);
    }
    const arg = config.otelTracesSamplerArg;
    if (arg !== undefined && !(/^\s*[0-9.eE+-]+\s*$/.test(arg) && Number(arg) >= 0 && Number(arg) <= 1))
      throw new ConfigError(
        `${label('otelTracesSamplerArg')} must be a number from 0 to 1, got "${arg.slice(0, 100)}"`,
      );
    const attributes = resourceAttributes(config.otelResourceAttributes);
    if (typeof attributes === 'string') throw new ConfigError(`${label('otelResourceAttributes')}: ${attributes}`);
  },
};
