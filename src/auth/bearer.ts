import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../app/errors.js';
import type { Scope } from '../store/store.js';
import { looksLikeToken } from './tokens.js';
import type { TokenCache } from './token-cache.js';

export interface Principal {
  tokenId: string;
  owner: string;
  scopes: readonly Scope[];
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
  interface FastifyContextConfig {
    /** The scope a route needs; routes without one are public. */
    scope?: Scope;
  }
}

// RFC 7235: the scheme name is case-insensitive; RFC 6750 b64token syntax.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

function countAuthorization(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 13 && raw[i]!.toLowerCase() === 'authorization') n++;
  return n;
}

/**
 * onRequest hook: runs before the body is read, so a request without valid
 * credentials is answered 401 whatever it carries.
 */
export function bearerAuth(cache: TokenCache) {
  return async function authenticate(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const scope = request.routeOptions.config.scope;
    if (!scope) return;
    const header = request.headers.authorization;
    if (header === undefined || !/^bearer(\s|$)/i.test(header)) throw errors.missingCredentials();
    // Node keeps the first of several Authorization headers; a proxy might use
    // another one. Refuse the ambiguity instead of guessing.
    if (countAuthorization(request.raw.rawHeaders) > 1) throw errors.invalidToken('more than one Authorization header');
    const token = BEARER.exec(header)?.[1];
    if (!token || !looksLikeToken(token)) throw errors.invalidToken('malformed token');
    const record = await cache.lookup(token);
    if (!record) throw errors.invalidToken('unknown token');
    if (record.revokedAt) throw errors.invalidToken('token revoked');
    if (record.expiresAt && record.expiresAt.getTime() <= Date.now()) throw errors.invalidToken('token expired');
    if (!record.scopes.includes(scope)) throw errors.insufficientScope(scope);
    request.principal = { tokenId: record.id, owner: record.owner, scopes: record.scopes };
  };
}
