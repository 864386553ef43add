import type { FastifyBaseLogger } from 'fastify';
import {
  createRemoteJWKSet,
  customFetch,
  errors as joseErrors,
  type JWTHeaderParameters,
  type FlattenedJWSInput,
} from 'jose';
import { unprotectedKeyUrl, type JwtKeySource } from '../config.js';
import { clip } from '../http/log-lines.js';
import { errorMessages } from '../store/error-causes.js';
import { HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE, SERVER_ADDRESS, SERVER_PORT } from '../tracing/attributes.js';
import { tracing } from '../tracing/tracing.js';

export interface JwksTiming {
  /** Least time between two fetches that tokens with an unknown key cause. */
  cooldownMs: number;
  /** How often the key set is refreshed after a successful fetch. */
  refreshMs: number;
  /** Longest wait for one HTTP answer. */
  timeoutMs: number;
  /** The wait after a failed fetch before the next; it doubles with each failure in a row, up to 30 s. */
  retryMs: number;
}

const DEFAULT_TIMING: JwksTiming = { cooldownMs: 10_000, refreshMs: 5 * 60_000, timeoutMs: 5_000, retryMs: 1000 };

/** Largest key set or discovery document read; real ones are a few KiB. */
export const MAX_JWKS_BYTES = 512 * 1024;
/** Most keys a key set may hold; issuers publish a handful. */
export const MAX_JWKS_KEYS = 100;

/**
 * The body of `response` as text, refusing (and no longer reading) one past
 * `maxBytes`: the issuer's answer is held in memory, so its size is bounded.
 */
async function readCapped(response: Response, maxBytes: number, what: string): Promise<string> {
  const tooLarge = () => new Error(`${what} is larger than ${maxBytes} bytes`);
  if (Number(response.headers.get('content-length') ?? 0) > maxBytes) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** jose's fetch of the key set, bounded in bytes and in keys. */
const cappedJwksFetch = (url: string, options: RequestInit): Promise<Response> => {
  const traces = tracing();
  if (traces === undefined) return fetchCapped(url, options);
  const target = new URL(url);
  const attributes = {
    [HTTP_REQUEST_METHOD]: 'GET',
    [SERVER_ADDRESS]: target.hostname,
    [SERVER_PORT]: Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
  };
  return traces.client('GET', attributes, async (span) => {
    const response = await fetchCapped(url, options);
    span.setAttributes({ [HTTP_RESPONSE_STATUS_CODE]: response.status });
    if (response.status >= 400) span.fail(String(response.status));
    return response;
  });
};

async function fetchCapped(url: string, options: RequestInit): Promise<Response> {
  const response = await fetch(url, options);
  const text = await readCapped(response, MAX_JWKS_BYTES, 'the JWKS response');
  if (response.status === 200) {
    let keys: unknown;
    try {
      keys = (JSON.parse(text) as { keys?: unknown }).keys;
    } catch {
      keys = undefined; // jose reports what is wrong with it
    }
    if (Array.isArray(keys) && keys.length > MAX_JWKS_KEYS)
      throw new Error(`the JWKS holds ${keys.length} keys, more than the ${MAX_JWKS_KEYS} accepted`);
  }
  return new Response(text, { status: response.status, headers: response.headers });
}

// After a failed fetch the background retry waits 1 s, 2 s, 4 s, ... (retryMs, doubling) up to this.
const MAX_RETRY_MS = 30_000;

/** What /readyz reports about the key set. */
export interface JwksStatus {
  /** Keys were fetched at least once: JWTs can be verified. */
  ready: boolean;
  /** Keys in the set last fetched. */
  keys: number;
  fetchedAt?: string;
  /** The last fetch failed; the keys fetched before are still used. */
  stale: boolean;
}

/** A token needs a key this server does not have (none fetched yet, or none with its kid). */
export class NoSigningKeyError extends Error {
  override name = 'NoSigningKeyError';
}

type RemoteSet = ReturnType<typeof createRemoteJWKSet>;

/** A token's kid for messages and the log: it is the sender's text, so it is cut short. */
const kidOf = (header: JWTHeaderParameters): string =>
  header.kid === undefined ? 'null' : JSON.stringify(clip(String(header.kid), 64));

/**
 * The issuer's signing keys, fetched with jose's createRemoteJWKSet but on
 * this schedule: in the background at start and every refreshMs, and when a
 * token names a key this server does not know, at most once per cooldownMs
 * (a flood of made-up kids cannot make the server hammer the issuer). A
 * failed fetch keeps the keys already known.
 */
export class JwksKeys {
  readonly #source: JwtKeySource;
  readonly #log: FastifyBaseLogger;
  readonly #timing: JwksTiming;
  #remote: RemoteSet | undefined;
  #fetchedAt: number | undefined;
  #kids = new Set<string>();
  #keyCount = 0;
  #lastAttempt = -Infinity;
  #failedSince: number | undefined;
  #inflight: Promise<boolean> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #retryMs: number;
  #closed = false;
  /** Called after a refresh dropped keys: whatever was verified with them must be forgotten. */
  onKeysRemoved: () => void = () => {};

  constructor(source: JwtKeySource, log: FastifyBaseLogger, timing: Partial<JwksTiming> = {}) {
    this.#source = source;
    this.#log = log;
    this.#timing = { ...DEFAULT_TIMING, ...timing };
    this.#retryMs = this.#timing.retryMs;
  }

  /** Starts fetching in the background; the server does not wait for the issuer. */
  start(): void {
    void this.#refresh('start');
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  status(): JwksStatus {
    return {
      ready: this.#fetchedAt !== undefined,
      keys: this.#keyCount,
      ...(this.#fetchedAt !== undefined ? { fetchedAt: new Date(this.#fetchedAt).toISOString() } : {}),
      stale: this.#failedSince !== undefined,
    };
  }

  /** The key for jwtVerify: the one the token's header names, fetching the set again if it is unknown (within the cooldown). */
  readonly getKey = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    if (this.#fetchedAt === undefined && !(await this.#refreshSoon('no keys yet'))) {
      throw new NoSigningKeyError('the signing keys have not been fetched from the issuer yet');
    }
    const remote = this.#remote!;
    try {
      return await remote(header, token);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey)) throw error;
      if (await this.#refreshSoon(`unknown key ${kidOf(header)}`)) {
        try {
          return await remote(header, token);
        } catch (again) {
          if (!(again instanceof joseErrors.JWKSNoMatchingKey)) throw again;
        }
      }
      throw new NoSigningKeyError(`no signing key matches kid ${kidOf(header)}`);
    }
  };

  /** Joins a fetch under way, or starts one if the cooldown allows; false when none could be had or it failed. */
  #refreshSoon(why: string): Promise<boolean> {
    if (this.#inflight) return this.#inflight;
    if (Date.now() - this.#lastAttempt < this.#timing.cooldownMs) return Promise.resolve(false);
    return this.#refresh(why);
  }

  #refresh(why: string): Promise<boolean> {
    this.#inflight ??= this.#fetch(why).finally(() => (this.#inflight = undefined));
    return this.#inflight;
  }

  async #fetch(why: string): Promise<boolean> {
    this.#lastAttempt = Date.now();
    clearTimeout(this.#timer);
    let ok = false;
    let nextInMs = this.#timing.refreshMs;
    try {
      this.#remote ??= createRemoteJWKSet(await this.#jwksUrl(), {
        timeoutDuration: this.#timing.timeoutMs,
        // Fetching is scheduled here, not by jose: once it has keys it never fetches on its own.
        cooldownDuration: Infinity,
        cacheMaxAge: Infinity,
        [customFetch]: cappedJwksFetch,
      });
      await this.#remote.reload();
      this.#loaded(why);
      ok = true;
    } catch (error) {
      nextInMs = this.#failed(why, error);
    }
    if (!this.#closed) {
      this.#timer = setTimeout(() => void this.#refresh('scheduled'), nextInMs);
      this.#timer.unref();
    }
    return ok;
  }

  #loaded(why: string): void {
    const keys = this.#remote!.jwks()?.keys ?? [];
    const kids = new Set(keys.map((k, i) => k.kid ?? `#${i}`));
    const removed = [...this.#kids].filter((kid) => !kids.has(kid));
    const added = [...kids].filter((kid) => !this.#kids.has(kid));
    const first = this.#fetchedAt === undefined;
    this.#fetchedAt = Date.now();
    this.#kids = kids;
    this.#keyCount = keys.length;
    this.#retryMs = this.#timing.retryMs;
    if (first || added.length || removed.length || this.#failedSince !== undefined) {
      this.#log.info({ jwks: { why, keys: keys.length, added, removed } }, 'JWT signing keys fetched');
    }
    this.#failedSince = undefined;
    if (removed.length) this.onKeysRemoved();
  }

  /** Logs a failed fetch; returns how long to wait before the next try, as the log line says. */
  #failed(why: string, error: unknown): number {
    this.#failedSince ??= Date.now();
    const retryInMs = this.#retryMs;
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
    const known = this.#fetchedAt !== undefined;
    this.#log.warn(
      { jwks: { why, error: errorMessages(error), keptKeys: this.#keyCount, retryInMs } },
      known
        ? 'fetching the JWT signing keys failed; the keys fetched before stay in use'
        : 'fetching the JWT signing keys failed; JWTs are refused until it succeeds',
    );
    return retryInMs;
  }

  /** The JWKS URL: configured, or discovered once from the issuer's OpenID configuration. */
  async #jwksUrl(): Promise<URL> {
    if ('jwksUrl' in this.#source) return new URL(this.#source.jwksUrl);
    return discoverJwksUrl(this.#source.oidcIssuer, this.#source.allowHttp ?? false, this.#timing.timeoutMs);
  }
}

/**
 * OpenID Connect Discovery 1.0, section 4: the issuer's configuration names
 * its jwks_uri. The keys are fetched from there only under the rule the
 * configured URL obeys (unprotectedKeyUrl): an https issuer could otherwise
 * send them over plain http to another machine.
 */
async function discoverJwksUrl(issuer: string, allowHttp: boolean, timeoutMs: number): Promise<URL> {
  const where = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
  const response = await fetch(where, {
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
    headers: { accept: 'application/json' },
  });
  if (response.status !== 200) throw new Error(`${where} answered ${response.status}, expected 200`);
  const doc = JSON.parse(await readCapped(response, MAX_JWKS_BYTES, `${where}'s answer`)) as {
    issuer?: unknown;
    jwks_uri?: unknown;
  };
  // The document must be the issuer's own (a trailing slash aside): a token's
  // iss is checked separately, against --jwt-issuer, exactly.
  if (typeof doc.issuer !== 'string' || doc.issuer.replace(/\/$/, '') !== issuer.replace(/\/$/, '')) {
    throw new Error(`${where} names issuer ${JSON.stringify(doc.issuer)}, not ${JSON.stringify(issuer)}`);
  }
  if (typeof doc.jwks_uri !== 'string') throw new Error(`${where} has no jwks_uri`);
  const url = new URL(doc.jwks_uri);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new Error(`${where} names a jwks_uri that is not http(s)`);
  const unprotected = unprotectedKeyUrl(url, allowHttp);
  if (unprotected !== undefined) throw new Error(`${where} names a jwks_uri that ${unprotected}`);
  return url;
}
