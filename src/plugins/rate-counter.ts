import type { FastifyBaseLogger } from 'fastify';
import { Redis } from 'ioredis';

/** A fixed-window counter: the count of this window so far (this hit included), and when the window ends. */
export interface Count {
  count: number;
  ttlMs: number;
}

export interface RateCounter {
  /** Counts one hit for `key`; a key's window starts with its first hit. Rejects when the count is unknown. */
  incr(key: string, windowMs: number): Promise<Count>;
  close(): Promise<void>;
}

/** Counts in this process's memory: without --redis each process counts alone. */
export class LocalCounter implements RateCounter {
  readonly #windows = new Map<string, { count: number; resetAt: number }>();

  constructor(private readonly maxKeys = 100_000) {}

  async incr(key: string, windowMs: number): Promise<Count> {
    const now = Date.now();
    let w = this.#windows.get(key);
    if (w === undefined || w.resetAt <= now) {
      // Insertion order is window-start order: the first key is the oldest window.
      if (w === undefined && this.#windows.size >= this.maxKeys)
        this.#windows.delete(this.#windows.keys().next().value!);
      else if (w !== undefined) this.#windows.delete(key);
      w = { count: 0, resetAt: now + windowMs };
      this.#windows.set(key, w);
    }
    w.count++;
    return { count: w.count, ttlMs: w.resetAt - now };
  }

  async close(): Promise<void> {}
}

// INCR and the window's expiry in one atomic step, so processes sharing the
// key never see a counter without an expiry.
const INCR_IN_WINDOW = `
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {n, ttl}`;

/** A request never waits longer than this on Redis; past it the request is served unlimited (fail open). */
const COMMAND_TIMEOUT_MS = 500;
/** After a failed command, requests skip Redis for this long instead of each waiting on it. */
const RETRY_AFTER_FAILURE_MS = 1000;

type CountingRedis = Redis & { plantStoreIncr(key: string, windowMs: number): Promise<[number, number]> };

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
 * prefix. While Redis cannot answer, incr rejects at once (no offline queue,
 * short timeouts) so that the limiter can let requests through; a warning is
 * logged once per outage and the recovery once, and counting resumes by itself.
 */
export class RedisCounter implements RateCounter {
  readonly #client: CountingRedis;
  readonly #target: string;
  #down = false;
  #skipUntil = 0;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly log: FastifyBaseLogger,
  ) {
    this.#target = redisTarget(url);
    this.#client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      connectTimeout: 1000,
      // Keep reconnecting, at least once a second, for as long as the process runs.
      retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
    }) as CountingRedis;
    this.#client.defineCommand('plantStoreIncr', { numberOfKeys: 1, lua: INCR_IN_WINDOW });
    this.#client.on('error', (error: Error) => this.#failed(error));
    this.#client.on('ready', () => this.#recovered());
  }

  /** Connects, waiting at most `timeoutMs`; a server that starts without Redis counts as an outage and serves on. */
  async connect(timeoutMs = 1000): Promise<void> {
    const ready = this.#client.connect().catch((error: Error) => this.#failed(error));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([ready, timeout]);
    clearTimeout(timer);
    if (this.#client.status !== 'ready') this.#failed(new Error(`not connected within ${timeoutMs} ms`));
  }

  async incr(key: string, windowMs: number): Promise<Count> {
    if (this.#down && Date.now() < this.#skipUntil) throw new RedisUnavailableError();
    try {
      const [count, ttlMs] = await this.#client.plantStoreIncr(this.prefix + key, windowMs);
      if (this.#down) this.#recovered();
      return { count, ttlMs };
    } catch (error) {
      this.#failed(error as Error);
      throw error;
    }
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
