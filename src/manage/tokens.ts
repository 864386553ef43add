// Token management, the one home of what `plant-store token create|list|revoke`
// and the admin API's /admin/tokens do.
import { InvalidOwnerError, assertValidOwner, hashToken, looksLikeToken, parseDuration } from '../auth/tokens.js';
import { SCOPES, type Scope, type TokenRecord, type TokenStore } from '../store/store.js';
import { ManageError, shownId } from './manage-error.js';

/** A valid owner name, or a ManageError naming `field`. */
export function checkOwner(owner: unknown, field: string): string {
  if (typeof owner !== 'string') throw new ManageError('invalid', `${field} is required`);
  try {
    assertValidOwner(owner);
  } catch (error) {
    throw error instanceof InvalidOwnerError ? new ManageError('invalid', `${field}: ${error.message}`) : error;
  }
  return owner;
}

export function checkScopes(scopes: readonly string[], field: string): Scope[] {
  for (const s of scopes)
    if (!SCOPES.includes(s as Scope))
      throw new ManageError('invalid', `${field} must be one of ${SCOPES.join(', ')}, got ${JSON.stringify(s)}`);
  return scopes as Scope[];
}

/** "30d" → ms, or undefined when not given. */
export function checkExpiresIn(text: string | undefined, field: string): number | undefined {
  if (text === undefined) return undefined;
  try {
    return parseDuration(text);
  } catch (error) {
    throw new ManageError('invalid', `${field}: ${(error as Error).message}`);
  }
}

/** Every token (or one owner's), never a secret: only hashes are stored. */
export async function listTokens(tokens: TokenStore, owner?: string): Promise<TokenRecord[]> {
  const all = await tokens.list();
  return owner === undefined ? all : all.filter((t) => t.owner === owner);
}

/** Revokes a token given itself or its id; a ManageError ('not-found') when none matches. A token given is never echoed. */
export async function revokeToken(tokens: TokenStore, target: string, now = new Date()): Promise<void> {
  const byToken = looksLikeToken(target);
  if (!(await tokens.revoke(byToken ? hashToken(target) : target, now)))
    throw new ManageError(
      'not-found',
      byToken ? 'no token matches the token given' : `no token has the id ${shownId(target)}`,
    );
}
