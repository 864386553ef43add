import { createHash, randomBytes } from 'node:crypto';
import { SCOPES, type Scope, type TokenRecord, type TokenStore } from '../store/store.js';

// A recognizable prefix lets secret scanners spot leaked tokens; 32 random
// bytes give 256 bits of entropy, so a fast hash is enough to store them.
export const TOKEN_PREFIX = 'plnt_';
const TOKEN_SHAPE = /^plnt_[A-Za-z0-9_-]{43}$/;
// "|" because identity providers put it in subjects (Auth0: "auth0|5f7c…"),
// and a JWT's owner must also be one an opaque token can have.
export const OWNER_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._@|-]{0,127}$/;

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

/** Why a stored token can no longer be used, or undefined while it can. */
export function unusableReason(record: TokenRecord, now = Date.now()): 'token revoked' | 'token expired' | undefined {
  if (record.revokedAt) return 'token revoked';
  if (record.expiresAt && record.expiresAt.getTime() <= now) return 'token expired';
  return undefined;
}

export function looksLikeToken(value: string): boolean {
  return TOKEN_SHAPE.test(value);
}

/** What OWNER_SHAPE allows, said to whoever gave an owner it refuses. */
export const OWNER_RULE =
  'owner must be 1 to 128 characters of letters, digits, ".", "_", "@", "|" or "-", starting with a letter or digit';

/** Thrown for an owner name OWNER_SHAPE refuses; the CLI turns it into a usage error. */
export class InvalidOwnerError extends Error {
  constructor(readonly owner: string) {
    super(`${OWNER_RULE}, got ${JSON.stringify(owner)}`);
    this.name = 'InvalidOwnerError';
  }
}

/** Throws InvalidOwnerError unless `owner` is a valid owner name. */
export function assertValidOwner(owner: string): void {
  if (!OWNER_SHAPE.test(owner)) throw new InvalidOwnerError(owner);
}

/** Thrown for an expiry that is not a finite number or lands outside the range a Date can hold. */
export class InvalidExpiryError extends Error {
  constructor(expiresInMs: number) {
    super(`token lifetime must be a finite number of milliseconds within the range of a date, got ${expiresInMs}`);
    this.name = 'InvalidExpiryError';
  }
}

export interface IssuedToken {
  token: string;
  record: TokenRecord;
}

export async function issueToken(store: TokenStore, opts: TokenOptions): Promise<IssuedToken> {
  const issued = newToken(opts);
  await store.insert(issued.record, hashToken(issued.token));
  return issued;
}

/** Issues the store's first token, unless it has one already (then undefined); safe when several servers start at once. */
export async function issueFirstToken(store: TokenStore, opts: TokenOptions): Promise<IssuedToken | undefined> {
  const issued = newToken(opts);
  return (await store.insertFirst(issued.record, hashToken(issued.token))) ? issued : undefined;
}

interface TokenOptions {
  owner: string;
  scopes?: readonly Scope[];
  expiresInMs?: number | undefined;
  now?: Date;
}

function newToken(opts: TokenOptions): IssuedToken {
  assertValidOwner(opts.owner);
  const scopes = [...new Set(opts.scopes?.length ? opts.scopes : SCOPES)].sort();
  const now = opts.now ?? new Date();
  let expiresAt: Date | undefined;
  if (opts.expiresInMs !== undefined) {
    // An invalid Date would be stored as NULL by SQLite, i.e. a token that
    // never expires: refuse it before anything is inserted.
    expiresAt = new Date(now.getTime() + opts.expiresInMs);
    if (!Number.isFinite(opts.expiresInMs) || Number.isNaN(expiresAt.getTime())) {
      throw new InvalidExpiryError(opts.expiresInMs);
    }
  }
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const record: TokenRecord = {
    id: 'tok_' + randomBytes(8).toString('hex'),
    owner: opts.owner,
    scopes,
    createdAt: now,
    expiresAt,
  };
  return { token, record };
}

const UNITS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** The longest lifetime parseDuration accepts: 100 years of 365.25 days. */
export const MAX_DURATION_MS = 36525 * UNITS.d!;

/** "30d", "12h", "90m", "3600s", "2w" → milliseconds; at most 100 years (36525d). */
export function parseDuration(text: string): number {
  const m = /^(\d{1,9})([smhdw])$/.exec(text);
  if (!m || Number(m[1]) === 0) throw new Error(`duration must look like 30d, 12h, 90m, 3600s or 2w, got "${text}"`);
  const ms = Number(m[1]) * UNITS[m[2]!]!;
  if (ms > MAX_DURATION_MS) throw new Error(`duration must be at most 100 years (36525d), got "${text}"`);
  return ms;
}
