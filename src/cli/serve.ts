import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { startAdmin } from '../app/admin.js';
import { buildApp } from '../app/app.js';
import { flushLogger } from '../app/logger.js';
import { ALL_SETTINGS, webhookKeyPath, type Config } from '../config.js';
import { errors } from '../http/errors.js';
import { metricsText } from '../metrics/metrics.js';
import { DeliveryLoop } from '../outbox/delivery-loop.js';
import { commandConfig, type Command, type CommandContext } from './args.js';
import { announceCurl, announceToken, baseUrl, bootstrapToken, logTokenHint, usableTokenCount } from './bootstrap.js';
import { runPrimary } from './serve-cluster.js';
import { exitCodeFor, forceHint, onShutdownSignals } from './shutdown-signals.js';
import { checkCommandConnections, openCommandStore } from './store.js';
import { describeLocation, storeLocation } from './store-location.js';

const SHUTDOWN_GRACE_MS = 25_000;

export const serve: Command = {
  name: 'serve',
  usage: 'serve [--config FILE] [options]',
  summary:
    'Serves the Plant Store HTTP API. Migrates the store on start. On a store with no tokens it creates one for owner "admin" and prints it once to stderr. SIGTERM or SIGINT stops accepting connections, lets in-flight requests finish, closes the store and exits 0; a second one, a second or more later, exits at once.',
  output:
    'Log lines as JSON on stdout (pretty on a terminal). On a store with no usable token, the new admin token alone on a line of stderr, with a curl example. Exit code 0 after a graceful stop, 1 when it could not start or a drain failed, 130 or 143 when a second SIGINT or SIGTERM forced the exit.',
  settings: [...ALL_SETTINGS],
  async run(ctx, values) {
    const config = commandConfig(this, values, ctx, { logPretty: ctx.isTTY });
    // Once, before any worker starts: workers × pool size must fit the database.
    if (cluster.isPrimary) await checkCommandConnections(config, config.workers);
    if (cluster.isPrimary && config.workers > 1) return runPrimary(config, ctx);
    return runServer(config, ctx);
  },
};

/** One server process: listen, then wait for SIGTERM/SIGINT and shut down gracefully. */
async function runServer(config: Readonly<Config>, ctx: CommandContext): Promise<number> {
  const store = await openCommandStore(config);
  const token = cluster.isWorker ? undefined : await bootstrapToken(store);
  // Shown at once: the store keeps only its hash, so a failed listen must not lose it.
  // With --port 0 the curl example waits for the port the server gets.
  if (token) announceToken(ctx, token, config.port === 0 ? undefined : baseUrl(config));
  const app = await buildApp(config, { store });
  const where = storeLocation(config.db);
  // With --workers the primary has said both already.
  if (!cluster.isWorker) {
    app.log.info({ store: where }, `store: ${describeLocation(where)}`);
    if (!token) logTokenHint(app.log, await usableTokenCount(store), where);
  }
  // Webhook events go out from this loop, never from a request's handling.
  const deliveries = new DeliveryLoop({
    outbox: store.outbox,
    webhooks: store.webhooks,
    keyPath: webhookKeyPath(config),
    allowPrivate: config.webhooksAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
    maxPending: config.webhooksMaxPending,
    log: app.log,
  });
  // Signals are handled from before listen: a supervisor may send SIGTERM as
  // soon as it sees the "listening" line, before listen() has returned here.
  let listening: Promise<unknown> = new Promise(() => {});
  let stopListening = () => {};
  // The admin listener (--admin-port) starts after the public one; a drain closes it too.
  let admin: Promise<FastifyInstance | undefined> = Promise.resolve(undefined);
  let draining = false;
  const exited = new Promise<number>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (code: number) => {
      clearTimeout(timer);
      stopListening();
      flushLogger(app.log);
      resolve(code);
    };
    stopListening = onShutdownSignals(ctx.signals, {
      async drain(signal) {
        draining = true;
        app.log.info({ signal }, `shutting down: finishing in-flight requests (${forceHint(signal)})`);
        timer = setTimeout(() => {
          app.log.error('in-flight requests did not finish in time; exiting');
          done(1);
        }, SHUTDOWN_GRACE_MS).unref();
        try {
          await listening.catch(() => {});
          await Promise.all([app.close(), deliveries.stop()]);
          await (await admin.catch(() => undefined))?.close();
          await store.close();
          done(0);
        } catch (error) {
          app.log.error({ err: error }, 'shutdown failed');
          done(1);
        }
      },
      force(signal) {
        // Acknowledged writes are already committed; only unanswered requests are cut off.
        app.log.warn({ signal }, `${signal} again: exiting now, without waiting for in-flight requests`);
        done(exitCodeFor(signal));
      },
    });
  });
  try {
    listening = app.listen({ host: config.host, port: config.port });
    await listening;
  } catch (error) {
    stopListening();
    await deliveries.stop();
    await app.close().catch(() => {});
    await store.close().catch(() => {});
    throw error;
  }
  // In a cluster the primary serves the admin port, with the sums over the workers.
  if (config.adminPort !== null && !cluster.isWorker && !draining) {
    admin = startAdmin(config.host, config.adminPort, {
      logger: app.log,
      limits: config,
      metrics: metricsText,
      // The public /readyz's verdict: the store, and the JWT keys when JWTs are on.
      ready: async () => {
        const res = await app
          .inject({ method: 'GET', url: '/readyz' })
          .catch(() => Promise.reject(errors.unavailable('the server is shutting down')));
        if (res.statusCode !== 200) throw errors.unavailable(res.json<{ message?: string }>().message);
      },
    });
    try {
      await admin;
    } catch (error) {
      stopListening();
      await app.close().catch(() => {});
      await store.close().catch(() => {});
      throw error;
    }
  }
  if (token && config.port === 0) {
    const address = app.server.address();
    announceCurl(ctx, token, baseUrl(config, typeof address === 'object' && address ? address.port : config.port));
  }
  flushLogger(app.log);
  deliveries.start();
  return exited;
}
