import type {
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
  onRequestHookHandler,
  RouteOptions,
} from 'fastify';
import { errors } from '../http/errors.js';
import { headerCount } from '../http/headers.js';
import { LogSampler, clip } from '../http/log-lines.js';
import type { Scope, TokenRecord } from '../store/store.js';
import type { JwtVerifier } from './jwt.js';
import { JwtRejection } from './jwt-rejection.js';
import type { Principal } from './principal.js';
import { TOKEN_PREFIX, looksLikeToken, unusableReason } from './tokens.js';
import { NOT_CACHED, type TokenCache } from './token-cache.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

// RFC 7235: the scheme name is case-insensitive; RFC 6750 b64token syntax.
const BEARER = /^bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The bearer check for a scope, as an onRequest hook; `null`: any valid token, whatever its scopes. */
export type Authenticate = (scope: Scope | null) => onRequestHookHandler;

/** The routes that take a bearer token declare it for the OpenAPI document (open ones declare `security: []`). */
export function takesToken(route: Pick<RouteOptions, 'schema'>): boolean {
  const security = (route.schema as { security?: unknown } | undefined)?.security;
  return Array.isArray(security) && security.length > 0;
}

/**
 * Route-level onRequest hooks: they run before the body is read, so a request
 * without valid credentials is answered 401 whatever it carries. A token the
 * cache knows is checked without a promise or a store call.
 *
 * With `jwt`, a bearer token that is not one of ours (no plnt_ prefix) is
 * taken for a JWT; the owner and scopes it carries are checked exactly like
 * an opaque token's.
 */
export function bearerAuth(cache: TokenCache, jwt?: JwtVerifier): Authenticate {
  // Anyone can send bogus JWTs: one line per reason per 10 s, with a count of the others.
  const refusals = new LogSampler(10_000);
  const check = (request: FastifyRequest, scope: Scope | null, record: TokenRecord | undefined): Error | undefined => {
    if (!record) return errors.invalidToken('unknown token');
    const unusable = unusableReason(record);
    if (unusable) return errors.invalidToken(unusable);
    if (scope !== null && !record.scopes.includes(scope)) return errors.insufficientScope(scope);
    request.principal = {
      kind: 'opaque',
      tokenId: record.id,
      owner: record.owner,
      scopes: record.scopes,
      expiresAt: record.expiresAt?.getTime(),
    };
    return undefined;
  };
  return (scope) =>
    function authenticate(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
      const header = request.headers.authorization;
      if (header === undefined || !/^bearer(\s|$)/i.test(header)) return done(errors.missingCredentials());
      // Node keeps the first of several Authorization headers; a proxy might
      // use another one. Refuse the ambiguity instead of guessing.
      if (headerCount(request.raw.rawHeaders, 'authorization') > 1)
        return done(errors.invalidToken('more than one Authorization header'));
      const token = BEARER.exec(header)?.[1];
      if (!token) return done(errors.invalidToken('malformed token'));
      if (!looksLikeToken(token)) {
        if (jwt && !token.startsWith(TOKEN_PREFIX)) return checkJwt(jwt, refusals, request, scope, token, done);
        return done(errors.invalidToken('malformed token'));
      }
      const cached = cache.cached(token);
      if (cached !== NOT_CACHED) return done(check(request, scope, cached));
      cache.lookup(token).then((record) => done(check(request, scope, record)), done);
    };
}

function checkJwt(
  jwt: JwtVerifier,
  refusals: LogSampler,
  request: FastifyRequest,
  scope: Scope | null,
  token: string,
  done: HookHandlerDoneFunction,
): void {
  const allow = (principal: Principal): Error | undefined => {
    if (scope !== null && !principal.scopes.includes(scope)) return errors.insufficientScope(scope);
    request.principal = principal;
    return undefined;
  };
  const key = jwt.keyOf(token);
  const cached = jwt.cached(token, key);
  if (cached) return done(allow(cached));
  jwt.verify(token, key).then(
    (principal) => done(allow(principal)),
    (error: unknown) => {
      if (!(error instanceof JwtRejection)) return done(error as Error);
      // The reason, never the token; what came from the token (a kid) is cut short.
      const sampled = refusals.take(error.reason);
      if (sampled) {
        const more = sampled.omitted > 0 ? { similarBefore: sampled.omitted } : {};
        request.log.info({ reqId: request.id, jwt: clip(error.detail), ...more }, 'bearer JWT refused');
      }
      done(errors.invalidToken(error.reason, 'jwt'));
    },
  );
}
