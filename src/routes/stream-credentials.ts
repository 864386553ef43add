import type { FastifyBaseLogger } from 'fastify';
import type { Principal } from '../auth/principal.js';
import { unusableReason } from '../auth/tokens.js';
import { eventStreamsEndedWithCredentials } from '../metrics/metrics.js';
import type { Scope, TokenStore } from '../store/store.js';

/** Why a stream's credentials ended: what the stream's last event says. */
export type CredentialsEnd = 'revoked' | 'expired' | 'scope';

/** How often the open streams' credentials are checked: a stream ends within this (and one lookup) of its token. */
export const CREDENTIALS_CHECK_MS = 500;

interface Watched {
  principal: Principal;
  end: (reason: CredentialsEnd) => void;
}

/**
 * Ends long-lived responses when the credentials they were opened with stop
 * being valid. While any is watched, every `everyMs`: each one past its
 * expiry (a token's, a JWT's exp) ends, and the opaque tokens of all of them
 * are looked up again in the TokenStore, in one query for every distinct
 * token id, so a revocation made by any process (`token revoke`, another
 * server) reaches this one. A JWT cannot be revoked here: its exp is the end.
 */
export class StreamCredentials {
  readonly #watched = new Set<Watched>();
  #timer: NodeJS.Timeout | undefined;
  #looking = false;
  #failing = false;

  constructor(
    private readonly tokens: Pick<TokenStore, 'findByIds'>,
    private readonly scope: Scope,
    private readonly logger: FastifyBaseLogger,
    private readonly everyMs = CREDENTIALS_CHECK_MS,
  ) {}

  get watched(): number {
    return this.#watched.size;
  }

  /** Calls `end` once, when these credentials end; the function returned stops watching. */
  watch(principal: Principal, end: (reason: CredentialsEnd) => void): () => void {
    const watched: Watched = { principal, end };
    this.#watched.add(watched);
    this.#timer ??= setInterval(() => void this.check(), this.everyMs).unref();
    return () => this.#forget(watched);
  }

  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#watched.clear();
  }

  /** One round: expiries, then one lookup of the opaque tokens (skipped while the last one is still out). */
  async check(): Promise<void> {
    const now = Date.now();
    const ids = new Set<string>();
    for (const w of this.#watched) {
      const { expiresAt, kind, tokenId } = w.principal;
      if (expiresAt !== undefined && expiresAt <= now) this.#end(w, 'expired');
      else if (kind === 'opaque') ids.add(tokenId);
    }
    if (ids.size === 0 || this.#looking) return;
    this.#looking = true;
    try {
      const records = new Map((await this.tokens.findByIds([...ids])).map((r) => [r.id, r]));
      this.#failing = false;
      const at = Date.now();
      for (const w of this.#watched) {
        const { kind, tokenId } = w.principal;
        // Watched since the lookup began: judged at the next round.
        if (kind !== 'opaque' || !ids.has(tokenId)) continue;
        const record = records.get(tokenId);
        const unusable = record && unusableReason(record, at);
        if (!record || unusable === 'token revoked') this.#end(w, 'revoked');
        else if (unusable === 'token expired') this.#end(w, 'expired');
        else if (!record.scopes.includes(this.scope)) this.#end(w, 'scope');
      }
    } catch (error) {
      // The streams stay open: while the store cannot be read, no event reaches them either.
      if (!this.#failing) this.logger.warn({ err: error }, 'checking the tokens of live streams failed; trying again');
      this.#failing = true;
    } finally {
      this.#looking = false;
    }
  }

  #forget(watched: Watched): void {
    this.#watched.delete(watched);
    if (this.#watched.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #end(watched: Watched, reason: CredentialsEnd): void {
    if (!this.#watched.has(watched)) return;
    this.#forget(watched);
    eventStreamsEndedWithCredentials.inc({ reason });
    watched.end(reason);
  }
}
