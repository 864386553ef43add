import { tracingEnabled, type Config } from '../config.js';
import { setTracing, tracing } from './tracing.js';

/**
 * Starts tracing when an OTLP endpoint is set (and OTEL_SDK_DISABLED is not
 * true). Only then is the OpenTelemetry SDK imported: with tracing off the
 * process loads none of it.
 */
export async function startTracing(config: Readonly<Config>, serviceVersion: string): Promise<void> {
  if (!tracingEnabled(config) || tracing()) return;
  const { startSdk } = await import('./sdk.js');
  setTracing(await startSdk(config, serviceVersion));
}

/** Sends the spans not yet sent (at shutdown); nothing when tracing is off. */
export async function stopTracing(): Promise<void> {
  const running = tracing();
  setTracing(undefined);
  await running?.shutdown();
}
