import crypto from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyOptions, type KeyInput } from 'jose';
import { LRUCache } from 'lru-cache';
import { jwtKeySource, type Config } from '../config.js';
import { SCOPES, type Scope } from '../store/store.js';
import type { Principal } from './principal.js';
import { JwtRejection } from './jwt-rejection.js';
import { JwksKeys, NoSigningKeyError, type JwksStatus, type JwksTiming } from './jwks.js';
import { OWNER_SHAPE } from './tokens.js';

/** Asymmetric algorithms only: with an HMAC algorithm anyone holding the public key could sign. */
const JWT_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'];

const CLOCK_TOLERANCE_S = 30;

// Longer than any access token an issuer hands out; refused before any parsing.
const MAX_TOKEN_LENGTH = 16 * 1024;

export interface JwtOptions {
  maxCachedTokens?: number;
  timing?: Partial<JwksTiming>;
}

/**
 * Verifies bearer JWTs against the issuer's keys and remembers each verified
 * token until it expires, keyed by its SHA-256 (never the token itself), so a
 * token seen before costs a hash and a map lookup instead of a signature check.
 */
export class JwtVerifier {
  readonly keys: JwksKeys;
  readonly #options: JWTVerifyOptions;
  readonly #ownerClaim: string;
  /** Each entry lives until the token's exp plus the clock tolerance; past the bound, the least recently used goes. */
  readonly #verified: LRUCache<string, Principal>;
  #purgedAt = 0;

  constructor(
    config: Pick<
      Config,
      | 'jwksUrl'
      | 'oidcIssuer'
      | 'jwtAllowHttp'
      | 'jwtIssuer'
      | 'jwtAudience'
      | 'jwtOwnerClaim'
      | 'jwksCooldownMs'
      | 'jwksRetryMs'
    >,
    log: FastifyBaseLogger,
    options: JwtOptions = {},
  ) {
    const source = jwtKeySource(config);
    if (source === undefined) throw new Error('JwtVerifier needs a JWKS URL or an OIDC issuer');
    this.keys = new JwksKeys(source, log, {
      cooldownMs: config.jwksCooldownMs,
      retryMs: config.jwksRetryMs,
      ...options.timing,
    });
    this.keys.onKeysRemoved = () => this.#verified.clear();
    this.#options = {
      issuer: config.jwtIssuer!,
      audience: config.jwtAudience!,
      algorithms: JWT_ALGORITHMS,
      clockTolerance: CLOCK_TOLERANCE_S,
      requiredClaims: ['exp'],
    };
    this.#ownerClaim = config.jwtOwnerClaim;
    // A JWT's exp is wall-clock time, so its entry expires by Date.now() (read on every get), not a monotonic clock.
    this.#verified = new LRUCache({
      max: options.maxCachedTokens ?? 10_000,
      perf: { now: () => Date.now() },
      ttlResolution: 0,
    });
  }

  start(): void {
    this.keys.start();
  }

  close(): void {
    this.keys.close();
    this.#verified.clear();
  }

  status(): JwksStatus {
    return this.keys.status();
  }

  /** The cache key of a token: pass it to cached() and verify() to hash each token once. */
  keyOf(token: string): string {
    return cacheKey(token);
  }

  /** The principal of a token verified before and not yet expired; undefined otherwise. Synchronous. */
  cached(token: string, key: string = cacheKey(token)): Principal | undefined {
    return this.#verified.get(key);
  }

  /** Verifies signature, algorithm and claims; throws JwtRejection. `key` is keyOf(token), when already known. */
  async verify(token: string, key?: string): Promise<Principal> {
    if (token.length > MAX_TOKEN_LENGTH) throw new JwtRejection('token too long');
    let payload: JWTPayload;
    try {
      payload = (await this.#verifyWithAnyKey(token)).payload;
    } catch (error) {
      throw rejection(error);
    }
    const principal = this.#principal(payload);
    this.#remember(key ?? cacheKey(token), principal, payload.exp! * 1000 + CLOCK_TOLERANCE_S * 1000);
    return principal;
  }

  async #verifyWithAnyKey(token: string) {
    try {
      return await jwtVerify(token, this.keys.getKey, this.#options);
    } catch (error) {
      // Several keys share the token's kid (or neither has one): the one that verifies wins.
      if (!(error instanceof joseErrors.JWKSMultipleMatchingKeys)) throw error;
      const candidates = error as unknown as AsyncIterable<KeyInput>;
      for await (const key of candidates) {
        try {
          return await jwtVerify(token, key, this.#options);
        } catch (inner) {
          if (!(inner instanceof joseErrors.JWSSignatureVerificationFailed)) throw inner;
        }
      }
      throw new joseErrors.JWSSignatureVerificationFailed();
    }
  }

  #principal(payload: JWTPayload): Principal {
    const owner = payload[this.#ownerClaim];
    if (owner === undefined) throw new JwtRejection(`token has no ${this.#ownerClaim} claim to name its owner`);
    if (typeof owner !== 'string' || !OWNER_SHAPE.test(owner)) {
      throw new JwtRejection(
        `the ${this.#ownerClaim} claim is not a valid owner name`,
        `the ${this.#ownerClaim} claim ${JSON.stringify(owner).slice(0, 100)} is not a valid owner name`,
      );
    }
    return {
      kind: 'jwt',
      tokenId: typeof payload.jti === 'string' ? `jwt:${payload.jti.slice(0, 100)}` : 'jwt',
      owner,
      scopes: scopesOf(payload),
      // exp is required (requiredClaims), so verification has checked that it is there.
      expiresAt: payload.exp! * 1000,
    };
  }

  #remember(tokenKey: string, principal: Principal, until: number): void {
    const now = Date.now();
    if (until <= now) return;
    // Full: expired tokens go before live ones. The purge walks every entry, so at most once a second.
    if (this.#verified.size >= this.#verified.max && now - this.#purgedAt >= 1000) {
      this.#purgedAt = now;
      this.#verified.purgeStale();
    }
    this.#verified.set(tokenKey, principal, { ttl: until - now });
  }
}

// crypto.hash (Node 20.12+) is about twice as fast as createHash for one short input.
const cacheKey: (token: string) => string =
  typeof crypto.hash === 'function'
    ? (token) => crypto.hash('sha256', token, 'base64')
    : (token) => crypto.createHash('sha256').update(token).digest('base64');

/** Scopes from `scope` (space-separated, RFC 8693/9068) and `scp` (an array, or a string as Entra ID sends it). */
function scopesOf(payload: JWTPayload): Scope[] {
  const names = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string') for (const s of value.split(' ')) names.add(s);
    else if (Array.isArray(value)) for (const s of value) if (typeof s === 'string') names.add(s);
  };
  add(payload.scope);
  add(payload.scp);
  return SCOPES.filter((s) => names.has(s));
}

const CLAIM_REASONS: Record<string, string> = {
  iss: 'token issuer not accepted',
  aud: 'token audience not accepted',
  nbf: 'token not valid yet',
};

/** jose's errors, as what the client is told and what the log gets. */
function rejection(error: unknown): JwtRejection {
  if (error instanceof JwtRejection) return error;
  if (error instanceof NoSigningKeyError) return new JwtRejection('no known signing key for this token', error.message);
  if (error instanceof joseErrors.JWTExpired)
    return new JwtRejection('token expired', `token expired: ${error.message}`);
  if (error instanceof joseErrors.JWTClaimValidationFailed) {
    const reason =
      error.reason === 'missing'
        ? `token has no ${error.claim} claim`
        : (CLAIM_REASONS[error.claim] ?? `token claim ${error.claim} not accepted`);
    return new JwtRejection(reason, `${reason}: ${error.message}`);
  }
  if (error instanceof joseErrors.JOSEAlgNotAllowed || error instanceof joseErrors.JOSENotSupported) {
    return new JwtRejection('signing algorithm not accepted', error.message);
  }
  if (error instanceof joseErrors.JWSSignatureVerificationFailed) return new JwtRejection('signature not valid');
  if (error instanceof joseErrors.JWSInvalid || error instanceof joseErrors.JWTInvalid) {
    return new JwtRejection('malformed token', `malformed JWT: ${error.message}`);
  }
  return new JwtRejection(
    'token not accepted',
    error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  );
}
