import type { FastifyBaseLogger } from 'fastify';
import { tracesUrl, type Config } from '../config.js';
import { withoutPassword } from '../db-url.js';
import { LogSampler } from '../http/log-lines.js';
import type { Tracing } from '../tracing/tracing.js';

// A receiver that is down refuses every export (one every few seconds under
// load) the same way: a line each would fill the log and say nothing new.
const SAME_PROBLEM_MS = 60_000;

/**
 * The OpenTelemetry SDK's warnings and errors (an export refused or not
 * answered, a setting it ignored) as warn lines of the service's log: the
 * first of each kind at once, then at most one a minute, saying how many
 * were left out. They name the traces URL, without its password.
 */
export function logTracingProblems(log: FastifyBaseLogger, tracing: Tracing, config: Readonly<Config>): void {
  const sampler = new LogSampler(SAME_PROBLEM_MS);
  const endpoint = withoutPassword(tracesUrl(config) ?? '');
  tracing.reportProblems(({ kind, message }) => {
    const taken = sampler.take(kind);
    if (taken === undefined) return;
    log.warn(
      { tracesEndpoint: endpoint, ...(!taken.first && { similarBefore: taken.omitted }) },
      `tracing: ${message} (the same problem again is logged at most once a minute)`,
    );
  });
}
