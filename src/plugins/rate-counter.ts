import { createRequire } from 'node:module';
import type { FastifyRateLimitStore } from '@fastify/rate-limit';
import type { FastifyBaseLogger } from 'fastify';
import type { Redis } from 'ioredis';

type StoreClass<Rest extends unknown[]> = new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  ...rest: Rest
) => FastifyRateLimitStore;

// The two stores @fastify/rate-limit ships, which its entry point does not
// export: a fixed window per key, in an LRU map of at most `cache` keys, or in
// Redis (INCR and PEXPIRE in one script, so no key is left without an expiry).
const require = createRequire(import.meta.url);
const LocalStore = require('@fastify/rate-limit/store/LocalStore') as StoreClass<[cache: number]>;
const RedisStore = require('@fastify/rate-limit/store/RedisStore') as StoreClass<[redis: Redis, key: string]>;

/** Where the rate limits count: each call of `store()` gives one limit its counters. */
export interface RateCounters {
  store(): FastifyRateLimitStore;
  close(): Promise<void>;
}

/**
 * Counts in this process's memory: without --redis each process counts alone.
 * Each limit has a store of its own, so keys of one limit (say, failed
 * authentications from many addresses) can never push another limit's
 * windows (an owner's) out of memory and so hand out fresh budget.
 */
export class LocalCounters implements RateCounters {
  constructor(private readonly maxKeys = 100_000) {}

  store(): FastifyRateLimitStore {
    return new LocalStore(false, false, this.maxKeys);
  }

  async close(): Promise<void> {}
}

/** A request never waits longer than this on Redis; past it the request is served unlimited (fail open). */
const COMMAND_TIMEOUT_MS = 500;
/** After a failed command, requests skip Redis for this long instead of each waiting on it. */
const RETRY_AFTER_FAILURE_MS = 1000;

class RedisUnavailableError extends Error {
  constructor() {
    super('Redis is unavailable');
    this.name = 'RedisUnavailableError';
  }
}

/** The URL without credentials, for the logs. */
function redisTarget(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
}

/**
 * Counts in Redis, shared by every process that uses the same Redis and key
 * prefix, over one connection for every limit. While Redis cannot answer, a
 * count fails at once (no offline queue, short timeouts) so that the limiter
 * can let requests through; a warning is logged once per outage and the
 * recovery once, and counting resumes by itself.
 */
export class RedisCounters implements RateCounters {
  readonly #client: Redis;
  readonly #target: string;
  #down = false;
  #skipUntil = 0;

  private constructor(
    client: Redis,
    url: string,
    private readonly prefix: string,
    private readonly log: FastifyBaseLogger,
  ) {
    this.#target = redisTarget(url);
    this.#client = client;
    this.#client.on('error', (error: Error) => this.#failed(error));
    this.#client.on('ready', () => this.#recovered());
  }

  /** Counters in the Redis at `url`, connected (or counting the outage); ioredis is loaded only here, where it is used. */
  static async open(url: string, prefix: string, log: FastifyBaseLogger): Promise<RedisCounters> {
    const { Redis } = await import('ioredis');
    const counters = new RedisCounters(
      new Redis(url, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        commandTimeout: COMMAND_TIMEOUT_MS,
        connectTimeout: 1000,
        // Keep reconnecting, at least once a second, for as long as the process runs.
        retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
      }),
      url,
      prefix,
      log,
    );
    await counters.connect();
    return counters;
  }

  /** Connects, waiting at most `timeoutMs`; a server that starts without Redis counts as an outage and serves on. */
  private async connect(timeoutMs = 1000): Promise<void> {
    const ready = this.#client.connect().catch((error: Error) => this.#failed(error));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([ready, timeout]);
    clearTimeout(timer);
    if (this.#client.status !== 'ready') this.#failed(new Error(`not connected within ${timeoutMs} ms`));
  }

  store(): FastifyRateLimitStore {
    const redis = new RedisStore(false, false, this.#client, this.prefix);
    const store: FastifyRateLimitStore = {
      incr: (key, callback, timeWindow, max) => {
        if (this.#down && Date.now() < this.#skipUntil) return callback(new RedisUnavailableError());
        redis.incr(
          key,
          (error, result) => {
            if (error) this.#failed(error);
            else if (this.#down) this.#recovered();
            callback(error, result);
          },
          timeWindow,
          max,
        );
      },
      child: () => store,
    };
    return store;
  }

  #failed(error: Error): void {
    this.#skipUntil = Date.now() + RETRY_AFTER_FAILURE_MS;
    if (this.#down) return;
    this.#down = true;
    this.log.warn(
      { redis: this.#target, err: error.message },
      'Redis is unreachable: rate limits are not enforced until it answers again',
    );
  }

  #recovered(): void {
    if (!this.#down) return;
    this.#down = false;
    this.log.info({ redis: this.#target }, 'Redis answers again: rate limits are enforced and shared again');
  }

  async close(): Promise<void> {
    this.#client.disconnect();
  }
}
