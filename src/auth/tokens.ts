import { createHash, randomBytes } from 'node:crypto';
import { SCOPES, type Scope, type TokenRecord, type TokenStore } from '../store/store.js';

// A recognizable prefix lets secret scanners spot leaked tokens; 32 random
// bytes give 256 bits of entropy, so a fast hash is enough to store them.
export const TOKEN_PREFIX = 'plnt_';
const TOKEN_SHAPE = /^plnt_[A-Za-z0-9_-]{43}$/;
export const OWNER_SHAPE = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token).digest();
}

export function looksLikeToken(value: string): boolean {
  return TOKEN_SHAPE.test(value);
}

export interface IssuedToken {
  token: string;
  record: TokenRecord;
}

export async function issueToken(
  store: TokenStore,
  opts: { owner: string; scopes?: readonly Scope[]; expiresInMs?: number | undefined; now?: Date },
): Promise<IssuedToken> {
  if (!OWNER_SHAPE.test(opts.owner)) {
    throw new Error('owner must be 1 to 64 characters of letters, digits, ".", "_", "@" or "-", starting with a letter or digit');
  }
  const scopes = [...new Set(opts.scopes?.length ? opts.scopes : SCOPES)].sort();
  const now = opts.now ?? new Date();
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
  const record: TokenRecord = {
    id: 'tok_' + randomBytes(8).toString('hex'),
    owner: opts.owner,
    scopes,
    createdAt: now,
    expiresAt: opts.expiresInMs === undefined ? undefined : new Date(now.getTime() + opts.expiresInMs),
  };
  await store.insert(record, hashToken(token));
  return { token, record };
}

const UNITS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** "30d", "12h", "90m", "3600s", "2w" → milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d{1,9})([smhdw])$/.exec(text);
  if (!m || Number(m[1]) === 0) throw new Error(`duration must look like 30d, 12h, 90m, 3600s or 2w, got "${text}"`);
  return Number(m[1]) * UNITS[m[2]!]!;
}
