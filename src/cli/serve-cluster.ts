import cluster, { type Address, type Worker } from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { LogSink } from '../app/log-sink.js';
import { adminApi, startAdmin } from './admin-listener.js';
import { relayEventWords } from './cluster-events.js';
import type { Config } from '../config.js';
import { errors } from '../http/errors.js';
import { clusterMetricsText } from '../metrics/metrics.js';
import type { Store } from '../store/store.js';
import type { CommandContext, ShutdownSignal } from './args.js';
import { logStream } from './log-stream.js';
import { announceCurl, announceToken, baseUrl, bootstrapToken, logTokenHint, usableTokenCount } from './bootstrap.js';
import { workersNotReady } from './cluster-readiness.js';
import { exitCodeFor, forceHint, onShutdownSignals } from './shutdown-signals.js';
import { openCommandStore } from './store.js';
import { logStoreLine, storeLocation } from './store-location.js';

/** A worker that died is replaced after this pause. */
const RESTART_DELAY_MS = 500;
/** This many worker exits within CRASH_WINDOW_MS is a crash loop: the primary gives up. */
const CRASH_LIMIT = 5;
const CRASH_WINDOW_MS = 10_000;

/** The primary's own log lines: JSON on stdout like the workers', pretty on a terminal. */
function primaryLogger(config: Pick<Config, 'logLevel' | 'logPretty'>, ctx: CommandContext): Logger {
  const stream = logStream(ctx);
  if (stream) return pino({ level: config.logLevel }, stream);
  if (config.logPretty) {
    return pino({
      level: config.logLevel,
      transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } },
    });
  }
  // Synchronous: the primary logs rarely, and its last lines come right before it exits.
  return pino({ level: config.logLevel }, new LogSink({ fd: 1, minLength: 0, sync: true }));
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
export async function runPrimary(config: Readonly<Config>, ctx: CommandContext, created?: string): Promise<number> {
  const { store, token, usable } = await prepareStore(config);
  // Shown at once: the store keeps only its hash, so a failed start must not
  // lose it. With --port 0 the curl example waits for the port the workers get.
  if (token) announceToken(ctx, token, config.port === 0 ? undefined : baseUrl(config), created);
  const log = primaryLogger(config, ctx);
  const where = storeLocation(config.db);
  logStoreLine(log, where, created !== undefined);
  if (!token) logTokenHint(log, usable, where);
  const workers = new Workers(config, ctx, log, token);
  const admin = config.adminPort === null ? undefined : await startPrimaryAdmin(config, log, store, workers);
  return workers.run(() => closeAdmin(admin, config.adminPort === null ? undefined : store));
}

/** Opens the store once (migrating it) and makes the first token; closed again unless the admin port needs it. */
async function prepareStore(
  config: Readonly<Config>,
): Promise<{ store: Store; token: string | undefined; usable: number }> {
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
  return { store, token, usable };
}

/** The workers of one primary: forked, watched, replaced, and stopped on a signal or a failure. */
class Workers {
  private readonly live = new Set<Worker>();
  private readonly everListened = new Set<Worker>();
  private readonly restartTimers = new Set<NodeJS.Timeout>();
  private readonly recentExits: number[] = [];
  private listeningEvents = 0;
  private announcedPort: number | undefined;
  private stopping = false;
  private failure: Error | undefined;
  private workerFailed = false;
  private forcedBy: ShutdownSignal | undefined;
  private stopSignals = () => {};
  private stopRelay = () => {};
  private settle: (finish: Promise<number>) => void = () => {};
  private close: () => Promise<void> = async () => {};

  constructor(
    private readonly config: Readonly<Config>,
    private readonly ctx: CommandContext,
    private readonly log: Logger,
    private readonly token: string | undefined,
  ) {}

  /** Why /readyz is not ready, or undefined when every worker listens. */
  notReady(): string | undefined {
    if (this.stopping) return 'the server is shutting down';
    const listening = [...this.live].filter((w) => this.everListened.has(w)).length;
    return listening < this.config.workers ? `${listening} of ${this.config.workers} workers are listening` : undefined;
  }

  /** Why /readyz is not ready: a worker not listening, or one whose own /readyz is not ready. */
  async notReadyNow(): Promise<string | undefined> {
    return this.notReady() ?? (await workersNotReady(this.live));
  }

  /** Forks the workers; resolves with the exit code once they have all exited and `close` has run. */
  run(close: () => Promise<void>): Promise<number> {
    this.close = close;
    return new Promise<number>((resolve) => {
      this.settle = (finish) => resolve(finish);
      this.stopSignals = onShutdownSignals(this.ctx.signals, {
        drain: (signal) => {
          this.log.info({ signal }, `shutting down: workers finish in-flight requests (${forceHint(signal)})`);
          this.shutdown(undefined);
        },
        force: (signal) => {
          // A second SIGTERM makes each worker exit at once too.
          this.log.warn({ signal }, `${signal} again: workers exit now, without waiting for in-flight requests`);
          this.forcedBy = signal;
          if (this.live.size === 0) return this.finish();
          for (const w of this.live) w.process.kill('SIGTERM');
        },
      });
      cluster.on('listening', this.onListening);
      cluster.on('exit', this.onExit);
      this.stopRelay = relayEventWords(this.live);
      for (let i = 0; i < this.config.workers; i++) this.fork();
    });
  }

  private fork(): void {
    this.live.add(cluster.fork());
  }

  /** Says once where every worker listens, and again if --port 0 moved them. */
  private readonly onListening = (worker: Worker, address: Address): void => {
    this.everListened.add(worker);
    // The address the workers really got, which differs from config.port for --port 0.
    const url = baseUrl(this.config, address.port);
    if (++this.listeningEvents < this.config.workers) return;
    if (this.listeningEvents === this.config.workers) {
      this.announcedPort = address.port;
      this.log.info(`${this.config.workers} workers listening on ${url}`);
      if (this.token && this.config.port === 0) announceCurl(this.ctx, this.token, url);
    } else if (address.port !== this.announcedPort) {
      // With --port 0, once every worker has exited the shared socket is
      // closed, and the replacements get a new free port.
      this.announcedPort = address.port;
      this.log.warn(`workers now listen on ${url}: every worker had exited, and --port 0 picked a new port`);
    }
  };

  /** A worker exited: the end of a shutdown, a reason to give up, or one to replace. */
  private readonly onExit = (worker: Worker, code: number | null, signal: string | null): void => {
    this.live.delete(worker);
    const how = signal ?? code;
    if (this.stopping) {
      if (code !== 0) this.workerFailed = true;
      if (this.live.size === 0) this.finish();
      return;
    }
    if (!this.everListened.has(worker)) {
      return this.shutdown(
        new Error(`worker ${worker.process.pid} exited (${how}) before it listened on ${baseUrl(this.config)}`),
      );
    }
    const crashLoop = this.crashLoop(worker, how);
    if (crashLoop) return this.shutdown(crashLoop);
    this.log.error(`worker ${worker.process.pid} exited (${how}); starting a new one in ${RESTART_DELAY_MS} ms`);
    this.restartLater();
  };

  /** CRASH_LIMIT exits within CRASH_WINDOW_MS, counting this one: the error to give up with. */
  private crashLoop(worker: Worker, how: string | number | null): Error | undefined {
    const now = Date.now();
    this.recentExits.push(now);
    while (this.recentExits.length > 0 && this.recentExits[0]! <= now - CRASH_WINDOW_MS) this.recentExits.shift();
    if (this.recentExits.length < CRASH_LIMIT) return undefined;
    return new Error(
      `workers keep exiting: ${this.recentExits.length} exits within ${CRASH_WINDOW_MS / 1000} s (last: worker ${worker.process.pid}, ${how})`,
    );
  }

  private restartLater(): void {
    // Not unref'd: with every worker dead this timer is all that keeps the primary alive.
    const timer = setTimeout(() => {
      this.restartTimers.delete(timer);
      if (!this.stopping) this.fork();
    }, RESTART_DELAY_MS);
    this.restartTimers.add(timer);
  }

  /** Stops every worker (SIGTERM: they drain); `why` is the failure that made the primary give up. */
  private shutdown(why: Error | undefined): void {
    if (this.stopping) return;
    this.stopping = true;
    this.failure = why;
    for (const t of this.restartTimers) clearTimeout(t);
    this.restartTimers.clear();
    if (why) this.log.fatal(`${why.message}; stopping the other workers`);
    if (this.live.size === 0) return this.finish();
    for (const w of this.live) w.process.kill('SIGTERM');
  }

  /** Every worker has exited: close what the primary holds and settle the exit code. */
  private finish(): void {
    this.stopSignals();
    // cluster is one object per process: listeners left on it would outlive this primary (main() run again in-process).
    cluster.off('listening', this.onListening);
    cluster.off('exit', this.onExit);
    this.stopRelay();
    this.settle(
      this.close().then(() => {
        if (this.failure) throw this.failure;
        return this.forcedBy ? exitCodeFor(this.forcedBy) : this.workerFailed ? 1 : 0;
      }),
    );
  }
}

/**
 * The primary's admin listener: /metrics sums every worker's metrics (the
 * workers record; the primary asks each over IPC), /readyz is ready while
 * every worker listens and is ready by its own /readyz (asked over IPC too:
 * a disk that filled is seen by the workers, which write), and the store
 * answers.
 */
async function startPrimaryAdmin(
  config: Readonly<Config>,
  log: Logger,
  store: Store,
  workers: Pick<Workers, 'notReady' | 'notReadyNow'>,
): Promise<FastifyInstance> {
  // A scrape while workers start (or stop) is expected: 503, and one info line per start.
  let toldStarting = false;
  try {
    return await startAdmin(config.host, config.adminPort!, {
      logger: log,
      limits: config,
      api: adminApi(config, store),
      metrics: async () => {
        const starting = workers.notReady();
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
        const why = await workers.notReadyNow();
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
