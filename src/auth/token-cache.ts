import { metricsOn, tokenCacheHits, tokenCacheMisses } from '../metrics/metrics.js';
import type { TokenRecord, TokenStore } from '../store/store.js';
import { hashToken } from './tokens.js';

export const NOT_CACHED = Symbol('not cached');

interface Entry {
  record: TokenRecord | undefined;
  until: number;
}

/**
 * Remembers token lookups for a short time so a request does not read the
 * store every time. Entries live at most `ttlMs` (< 1 s), which bounds how
 * long a revocation made by another process or the CLI can go unnoticed.
 */
export class TokenCache {
  readonly #entries = new Map<string, Entry>();

  constructor(
    private readonly store: TokenStore,
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  /** The remembered lookup, or NOT_CACHED: lets the caller stay synchronous on a hit. */
  cached(token: string): TokenRecord | undefined | typeof NOT_CACHED {
    const hit = this.#remembered(token);
    if (metricsOn && hit !== NOT_CACHED) tokenCacheHits.inc();
    return hit;
  }

  #remembered(token: string): TokenRecord | undefined | typeof NOT_CACHED {
    const hit = this.#entries.get(token);
    return hit !== undefined && hit.until > Date.now() ? hit.record : NOT_CACHED;
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
    if (this.ttlMs > 0) {
      if (this.#entries.size >= this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
      this.#entries.delete(token);
      this.#entries.set(token, { record, until });
    }
    return record;
  }
}
