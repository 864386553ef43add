import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { adminApi, startAdmin } from './admin-listener.js';
import { buildApp } from '../app/app.js';
import { closeLogger, flushLogger } from '../app/logger.js';
import { ALL_SETTINGS, webhookKeyPath, type Config, type SettingsRead } from '../config.js';
import { errors } from '../http/errors.js';
import { metricsText } from '../metrics/metrics.js';
import { DeliveryLoop } from '../outbox/delivery-loop.js';
import { ClusterEventSignal } from './cluster-events.js';
import { answerReadiness } from './cluster-readiness.js';
import { readKeyFile } from '../outbox/secret-box.js';
import { commandSettingsRead, type ArgValues, type Command, type CommandContext } from './args.js';
import { announceCurl, announceToken, baseUrl, bootstrapToken, logTokenHint, usableTokenCount } from './bootstrap.js';
import { runPrimary } from './serve-cluster.js';
import { exitCodeFor, forceHint, onShutdownSignals } from './shutdown-signals.js';
import { checkCommandConnections, openCommandStore } from './store.js';
import { logStoreLine, newStoreAt, storeLocation } from './store-location.js';
import { logStream } from './log-stream.js';
import { startTracing, stopTracing } from '../tracing/start.js';
import { packageVersion } from './version.js';
import type { EventSignal, Store } from '../store/store.js';

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
    const { config } = serveSettings(this, values, ctx, { logPretty: ctx.isTTY });
    // Before anything is created: a mistyped --db must not become a new store unnoticed.
    const created = cluster.isPrimary ? newStoreAt(config.db) : undefined;
    // Once, before any worker starts: workers × pool size must fit the database.
    if (cluster.isPrimary) await checkCommandConnections(config, config.workers);
    if (cluster.isPrimary && config.workers > 1) return runPrimary(config, ctx, created);
    return runServer(config, ctx, created);
  },
};

/**
 * The settings serve runs with, refused as serve refuses them: `plant-store
 * config` shows them through this too. A webhook key file that is there is
 * read now, so that a bad one is refused at start, not at the first delivery.
 */
export function serveSettings(
  cmd: Command,
  values: ArgValues,
  ctx: CommandContext,
  extra: Parameters<typeof commandSettingsRead>[3] = {},
): SettingsRead {
  const read = commandSettingsRead(cmd, values, ctx, extra);
  if (cluster.isPrimary) readKeyFile(webhookKeyPath(read.config));
  return read;
}

/** What one server process runs; the shutdown reads it as it is when the signal comes. */
interface Running {
  app: FastifyInstance;
  store: Store;
  /** With --workers on a store with no signal of its own (behind a transaction pooler): the workers' channel. */
  eventSignal: EventSignal | undefined;
  /** With --workers: stops answering the primary's readiness questions. */
  stopAnswering: () => void;
  deliveries: DeliveryLoop;
  /** Settles once the public listener is up (or failed). */
  listening: Promise<unknown>;
  /** The admin listener (--admin-port), started after the public one. */
  admin: Promise<FastifyInstance | undefined>;
  draining: boolean;
}

/** One server process: listen, then wait for SIGTERM/SIGINT and shut down gracefully. */
async function runServer(config: Readonly<Config>, ctx: CommandContext, created?: string): Promise<number> {
  const { running, token } = await start(config, ctx, created);
  const { app } = running;
  const { exited, stopListening } = shutdownOnSignals(ctx, running);
  await listenPublic(config, running, stopListening);
  await listenAdmin(config, running, stopListening);
  if (token && config.port === 0) {
    const address = app.server.address();
    announceCurl(ctx, token, baseUrl(config, typeof address === 'object' && address ? address.port : config.port));
  }
  flushLogger(app.log);
  running.deliveries.start();
  return exited;
}

/** Opens the store and builds the app, not yet listening; on failure closes again whatever it had opened. */
async function start(
  config: Readonly<Config>,
  ctx: CommandContext,
  created: string | undefined,
): Promise<{ running: Running; token: string | undefined }> {
  // Before the store opens: its PostgreSQL connections are made traced when tracing is on.
  await startTracing(config, packageVersion(), ctx.env);
  const store = await openCommandStore(config).catch(async (error: unknown) => {
    await stopTracing();
    throw error;
  });
  // The store's own signal (PostgreSQL's LISTEN, SQLite's signal folder) reaches the other workers too.
  const eventSignal = cluster.isWorker && !store.eventSignal ? new ClusterEventSignal() : undefined;
  let app: FastifyInstance | undefined;
  try {
    const token = await firstToken(config, ctx, store, created);
    app = await buildApp(config, { store, logStream: logStream(ctx), eventSignal });
    await logStart(app, store, config, token, created !== undefined);
    const running: Running = {
      app,
      store,
      eventSignal,
      stopAnswering: cluster.isWorker ? answerReadiness(app) : () => {},
      deliveries: deliveryLoop(config, store, app),
      // Signals are handled from before listen: a supervisor may send SIGTERM as
      // soon as it sees the "listening" line, before listen() has returned here.
      listening: new Promise(() => {}),
      admin: Promise.resolve(undefined),
      draining: false,
    };
    return { running, token };
  } catch (error) {
    await app?.close().catch(() => {});
    await eventSignal?.close();
    await store.close().catch(() => {});
    await stopTracing();
    throw error;
  }
}

/** The first token of a store that has none, shown at once (a worker of --workers never makes one). */
async function firstToken(
  config: Readonly<Config>,
  ctx: CommandContext,
  store: Store,
  created: string | undefined,
): Promise<string | undefined> {
  const token = cluster.isWorker ? undefined : await bootstrapToken(store);
  // Shown at once: the store keeps only its hash, so a failed listen must not lose it.
  // With --port 0 the curl example waits for the port the server gets.
  if (token) announceToken(ctx, token, config.port === 0 ? undefined : baseUrl(config), created);
  return token;
}

/** The start-up lines: which store, and how to get a token. With --workers the primary has said both already. */
async function logStart(
  app: FastifyInstance,
  store: Store,
  config: Readonly<Config>,
  token: string | undefined,
  created: boolean,
): Promise<void> {
  if (cluster.isWorker) return;
  const where = storeLocation(config.db);
  logStoreLine(app.log, where, created);
  if (!token) logTokenHint(app.log, await usableTokenCount(store), where);
}

/** Webhook events go out from this loop, never from a request's handling. */
function deliveryLoop(config: Readonly<Config>, store: Store, app: FastifyInstance): DeliveryLoop {
  return new DeliveryLoop({
    outbox: store.outbox,
    webhooks: store.webhooks,
    keyPath: webhookKeyPath(config),
    allowPrivate: config.webhooksAllowPrivate,
    timeoutMs: config.webhookTimeoutMs,
    leaseMs: config.webhookLeaseMs,
    maxPending: config.webhooksMaxPending,
    log: app.log,
  });
}

/**
 * The first SIGTERM/SIGINT drains (in-flight requests finish, then the
 * listeners, the delivery loop and the store close); a later one exits at once.
 */
function shutdownOnSignals(
  ctx: CommandContext,
  running: Running,
): { exited: Promise<number>; stopListening: () => void } {
  const { app } = running;
  let stopListening = () => {};
  const exited = new Promise<number>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const done = (code: number) => {
      clearTimeout(timer);
      stopListening();
      void closeLogger(app.log).then(() => resolve(code));
    };
    stopListening = onShutdownSignals(ctx.signals, {
      async drain(signal) {
        running.draining = true;
        app.log.info({ signal }, `shutting down: finishing in-flight requests (${forceHint(signal)})`);
        timer = setTimeout(() => {
          app.log.error('in-flight requests did not finish in time; exiting');
          done(1);
        }, SHUTDOWN_GRACE_MS).unref();
        try {
          await running.listening.catch(() => {});
          await Promise.all([app.close(), running.deliveries.stop()]);
          await running.eventSignal?.close();
          running.stopAnswering();
          await (await running.admin.catch(() => undefined))?.close();
          await running.store.close();
          // The last spans are sent before the process exits.
          await stopTracing();
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
  return { exited, stopListening };
}

/** Listens on --host/--port; on failure closes everything and throws. */
async function listenPublic(config: Readonly<Config>, running: Running, stopListening: () => void): Promise<void> {
  const { app } = running;
  try {
    running.listening = app.listen({ host: config.host, port: config.port });
    await running.listening;
  } catch (error) {
    stopListening();
    await running.deliveries.stop();
    await app.close().catch(() => {});
    await running.store.close().catch(() => {});
    throw error;
  }
}

/** The admin listener (--admin-port). In a cluster the primary serves it instead, with the sums over the workers. */
async function listenAdmin(config: Readonly<Config>, running: Running, stopListening: () => void): Promise<void> {
  if (config.adminPort === null || cluster.isWorker || running.draining) return;
  const { app } = running;
  running.admin = startAdmin(config.host, config.adminPort, {
    logger: app.log,
    limits: config,
    metrics: metricsText,
    api: adminApi(config, running.store),
    // The public /readyz's verdict: the store, and the JWT keys when JWTs are on.
    ready: async () => {
      const res = await app
        .inject({ method: 'GET', url: '/readyz' })
        .catch(() => Promise.reject(errors.unavailable('the server is shutting down')));
      if (res.statusCode !== 200) throw errors.unavailable(res.json<{ message?: string }>().message);
    },
  });
  try {
    await running.admin;
  } catch (error) {
    stopListening();
    await app.close().catch(() => {});
    await running.store.close().catch(() => {});
    throw error;
  }
}
