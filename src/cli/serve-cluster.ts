import cluster, { type Address, type Worker } from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { destination, pino, type Logger } from 'pino';
import { startAdmin } from '../app/admin.js';
import type { Config } from '../config.js';
import { errors } from '../http/errors.js';
import { clusterMetricsText } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { CommandContext } from './args.js';
import { announceCurl, announceToken, baseUrl, bootstrapToken, logTokenHint, usableTokenCount } from './bootstrap.js';
import { exitCodeFor, forceHint, onShutdownSignals } from './shutdown-signals.js';
import { openCommandStore } from './store.js';
import { describeLocation, storeLocation } from './store-location.js';

/** A worker that died is replaced after this pause. */
const RESTART_DELAY_MS = 500;
/** This many worker exits within CRASH_WINDOW_MS is a crash loop: the primary gives up. */
const CRASH_LIMIT = 5;
const CRASH_WINDOW_MS = 10_000;

/** The primary's own log lines: JSON on stdout like the workers', pretty on a terminal. */
function primaryLogger(config: Pick<Config, 'logLevel' | 'logPretty'>): Logger {
  if (config.logPretty) {
    return pino({
      level: config.logLevel,
      transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } },
    });
  }
  // Synchronous: the primary logs rarely, and its last lines come right before it exits.
  return pino({ level: config.logLevel }, destination({ dest: 1, sync: true }));
}

/**
 * The primary of `serve --workers N`: migrates the store once, forks N
 * workers that share the listening port, replaces a worker that dies, and on
 * SIGTERM/SIGINT lets every worker drain before exiting 0.
 *
 * It gives up (stops the other workers, exits 1) when a worker exits before
 * it ever listened (port in use, database unreachable at start: a replacement
 * would fail the same way) or when workers keep dying (CRASH_LIMIT exits
 * within CRASH_WINDOW_MS).
 */
export async function runPrimary(config: Readonly<Config>, ctx: CommandContext): Promise<number> {
  const store = await openCommandStore(config);
  let token: string | undefined;
  let usable = 0;
  try {
    token = await bootstrapToken(store);
    if (!token) usable = await usableTokenCount(store);
  } finally {
    // With an admin port the primary keeps the store open to answer /readyz.
    if (config.adminPort === null) await store.close();
  }
  // Shown at once: the store keeps only its hash, so a failed start must not
  // lose it. With --port 0 the curl example waits for the port the workers get.
  if (token) announceToken(ctx, token, config.port === 0 ? undefined : baseUrl(config));

  const log = primaryLogger(config);
  const where = storeLocation(config.db);
  log.info({ store: where }, `store: ${describeLocation(where)}`);
  if (!token) logTokenHint(log, usable, where);
  const live = new Set<Worker>();
  const everListened = new Set<Worker>();
  const restartTimers = new Set<NodeJS.Timeout>();
  const recentExits: number[] = [];
  let listeningEvents = 0;
  let announcedPort: number | undefined;
  let stopping = false;
  const admin =
    config.adminPort === null
      ? undefined
      : await startPrimaryAdmin(config, log, store, () => {
          if (stopping) return 'the server is shutting down';
          const listening = [...live].filter((w) => everListened.has(w)).length;
          return listening < config.workers ? `${listening} of ${config.workers} workers are listening` : undefined;
        });

  const fork = () => {
    live.add(cluster.fork());
  };

  return new Promise<number>((resolve, reject) => {
    let failure: Error | undefined;
    let workerFailed = false;
    let forcedBy: 'SIGINT' | 'SIGTERM' | undefined;

    const finish = () => {
      stopListening();
      void closeAdmin(admin, config.adminPort === null ? undefined : store).then(() => {
        if (failure) reject(failure);
        else resolve(forcedBy ? exitCodeFor(forcedBy) : workerFailed ? 1 : 0);
      });
    };

    const shutdown = (why: Error | undefined) => {
      if (stopping) return;
      stopping = true;
      failure = why;
      for (const t of restartTimers) clearTimeout(t);
      restartTimers.clear();
      if (why) log.fatal(`${why.message}; stopping the other workers`);
      if (live.size === 0) return finish();
      for (const w of live) w.process.kill('SIGTERM');
    };

    const stopListening = onShutdownSignals(ctx.signals, {
      drain(signal) {
        log.info({ signal }, `shutting down: workers finish in-flight requests (${forceHint(signal)})`);
        shutdown(undefined);
      },
      force(signal) {
        // A second SIGTERM makes each worker exit at once too.
        log.warn({ signal }, `${signal} again: workers exit now, without waiting for in-flight requests`);
        forcedBy = signal;
        if (live.size === 0) return finish();
        for (const w of live) w.process.kill('SIGTERM');
      },
    });

    cluster.on('listening', (worker: Worker, address: Address) => {
      everListened.add(worker);
      // The address the workers really got, which differs from config.port for --port 0.
      const url = baseUrl(config, address.port);
      if (++listeningEvents < config.workers) return;
      if (listeningEvents === config.workers) {
        announcedPort = address.port;
        log.info(`${config.workers} workers listening on ${url}`);
        if (token && config.port === 0) announceCurl(ctx, token, url);
      } else if (address.port !== announcedPort) {
        // With --port 0, once every worker has exited the shared socket is
        // closed, and the replacements get a new free port.
        announcedPort = address.port;
        log.warn(`workers now listen on ${url}: every worker had exited, and --port 0 picked a new port`);
      }
    });

    cluster.on('exit', (worker: Worker, code: number | null, signal: string | null) => {
      live.delete(worker);
      const how = signal ?? code;
      if (stopping) {
        if (code !== 0) workerFailed = true;
        if (live.size === 0) finish();
        return;
      }
      if (!everListened.has(worker)) {
        return shutdown(
          new Error(`worker ${worker.process.pid} exited (${how}) before it listened on ${baseUrl(config)}`),
        );
      }
      const now = Date.now();
      recentExits.push(now);
      while (recentExits.length > 0 && recentExits[0]! <= now - CRASH_WINDOW_MS) recentExits.shift();
      if (recentExits.length >= CRASH_LIMIT) {
        return shutdown(
          new Error(
            `workers keep exiting: ${recentExits.length} exits within ${CRASH_WINDOW_MS / 1000} s (last: worker ${worker.process.pid}, ${how})`,
          ),
        );
      }
      log.error(`worker ${worker.process.pid} exited (${how}); starting a new one in ${RESTART_DELAY_MS} ms`);
      // Not unref'd: with every worker dead this timer is all that keeps the primary alive.
      const timer = setTimeout(() => {
        restartTimers.delete(timer);
        if (!stopping) fork();
      }, RESTART_DELAY_MS);
      restartTimers.add(timer);
    });

    for (let i = 0; i < config.workers; i++) fork();
  });
}

/**
 * The primary's admin listener: /metrics sums every worker's metrics (the
 * workers record; the primary asks each over IPC), /readyz is ready while
 * every worker listens and the store answers.
 */
async function startPrimaryAdmin(
  config: Readonly<Config>,
  log: Logger,
  store: Store,
  notReady: () => string | undefined,
): Promise<FastifyInstance> {
  // A scrape while workers start (or stop) is expected: 503, and one info line per start.
  let toldStarting = false;
  try {
    return await startAdmin(config.host, config.adminPort!, {
      logger: log,
      limits: config,
      metrics: async () => {
        const starting = notReady();
        if (starting !== undefined) {
          if (!toldStarting) log.info(`metrics are not served until every worker listens: ${starting}`);
          toldStarting = true;
          throw errors.unavailable(`metrics are not available yet: ${starting}`, 1);
        }
        try {
          return await clusterMetricsText();
        } catch (error) {
          log.warn({ reason: (error as Error).message }, 'collecting metrics from the workers failed');
          throw errors.unavailable('metrics could not be collected from every worker, try again', 1);
        }
      },
      ready: async () => {
        const why = notReady();
        if (why !== undefined) throw errors.unavailable(why);
        await store.ping();
      },
    });
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
}

async function closeAdmin(admin: FastifyInstance | undefined, store: Store | undefined): Promise<void> {
  await admin?.close().catch(() => {});
  await store?.close().catch(() => {});
}
