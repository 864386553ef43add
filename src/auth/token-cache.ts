import { LRUCache } from 'lru-cache';
import { metricsOn, tokenCacheHits, tokenCacheMisses } from '../metrics/metrics.js';
import type { TokenRecord, TokenStore } from '../store/store.js';
import { hashToken } from './tokens.js';

export const NOT_CACHED = Symbol('not cached');

/** A box, so that an unknown token (no record) is remembered too. */
interface Entry {
  record: TokenRecord | undefined;
}

/**
 * Remembers token lookups for a short time so a request does not read the
 * store every time. Entries live at most `ttlMs` (< 1 s) from the start of
 * the lookup, which bounds how long a revocation made by another process or
 * the CLI can go unnoticed. Past `maxEntries`, the least recently used goes.
 */
export class TokenCache {
  readonly #entries: LRUCache<string, Entry> | undefined;

  constructor(
    private readonly store: TokenStore,
    private readonly ttlMs: number,
    maxEntries = 10_000,
  ) {
    this.#entries = ttlMs > 0 ? new LRUCache({ max: maxEntries, ttl: ttlMs }) : undefined;
  }

  /** The remembered lookup, or NOT_CACHED: lets the caller stay synchronous on a hit. */
  cached(token: string): TokenRecord | undefined | typeof NOT_CACHED {
    const hit = this.#remembered(token);
    if (metricsOn && hit !== NOT_CACHED) tokenCacheHits.inc();
    return hit;
  }

  #remembered(token: string): TokenRecord | undefined | typeof NOT_CACHED {
    const hit = this.#entries?.get(token);
    return hit === undefined ? NOT_CACHED : hit.record;
  }

  /** Keyed by the token itself, so a hit costs no hashing; only a miss hashes it to ask the store. */
  async lookup(token: string): Promise<TokenRecord | undefined> {
    const hit = this.#remembered(token);
    if (hit !== NOT_CACHED) {
      if (metricsOn) tokenCacheHits.inc();
      return hit;
    }
    if (metricsOn) tokenCacheMisses.inc();
    const until = Date.now() + this.ttlMs;
    const record = await this.store.findByHash(hashToken(token));
    // The lifetime counts from before the read, so a slow read does not extend it.
    const ttl = until - Date.now();
    if (this.#entries !== undefined && ttl > 0) this.#entries.set(token, { record }, { ttl });
    return record;
  }
}
