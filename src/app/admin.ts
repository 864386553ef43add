import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { SECURITY_HEADERS } from '../http/headers.js';
import { METRICS_CONTENT_TYPE } from '../metrics/metrics.js';
import { healthRoutes } from '../routes/health.js';
import { ErrorBody } from '../schemas/error.js';
import { AppError } from '../http/errors.js';
import { SETTINGS } from '../config.js';
import { registerAdminApi, type AdminApiOptions } from './admin-api.js';
import { guardConnections, serverTimeouts, type ConnectionLimits } from './connection-limits.js';
import { clientErrorHandler, frameworkErrors, registerErrorHandling, sendError } from './error-handler.js';

export interface AdminOptions {
  logger: FastifyBaseLogger;
  /** The Prometheus text exposition (this process's, or the sum over the workers). */
  metrics: () => Promise<string>;
  /** Resolves when the service is ready; rejects with the reason it is not. */
  ready: () => Promise<void>;
  /** The main port's connection cap and timeouts (the defaults when not given). */
  limits?: ConnectionLimits | undefined;
  /** The admin API (--admin-token-file); without it, its routes do not exist. */
  api?: AdminApiOptions | undefined;
}

const DEFAULT_LIMITS: ConnectionLimits = {
  headersTimeoutMs: Number(SETTINGS['headers-timeout-ms'].default),
  requestTimeoutMs: Number(SETTINGS['request-timeout-ms'].default),
  keepAliveTimeoutMs: Number(SETTINGS['keep-alive-timeout-ms'].default),
  maxConnections: Number(SETTINGS['max-connections'].default),
};

/**
 * The admin listener (--admin-port): /metrics, /healthz and /readyz on a port
 * of their own, so that metrics are never reachable on the public port. It
 * logs no line per request: a scrape every few seconds would drown the log.
 * Its connections get the main port's cap and timeouts, so that it cannot be
 * held open by clients that connect and send nothing. The CLI's serve listens.
 */
export async function buildAdminApp({
  logger,
  metrics,
  ready,
  limits = DEFAULT_LIMITS,
  api,
}: AdminOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: logger,
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors,
    clientErrorHandler,
    forceCloseConnections: true,
    ...serverTimeouts(limits),
  });
  guardConnections(app.server, limits, logger);
  registerErrorHandling(app, 0, false);
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(SECURITY_HEADERS);
    done();
  });
  app.addSchema(ErrorBody);
  app.get('/metrics', async (_request, reply) => {
    try {
      return reply.type(METRICS_CONTENT_TYPE).send(await metrics());
    } catch (error) {
      // An expected refusal (workers still starting) was logged by whoever raised it.
      if (error instanceof AppError) return sendError(reply, error);
      throw error;
    }
  });
  await app.register(healthRoutes, { store: { ping: ready } });
  if (api) await registerAdminApi(app, api);
  return app;
}
