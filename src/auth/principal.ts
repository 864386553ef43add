import type { Scope } from '../store/store.js';

/** Who a request acts for, once its bearer token (opaque or JWT) is accepted. */
export interface Principal {
  /** An opaque token is looked up in the TokenStore (so it can be revoked); a JWT is not. */
  kind: 'opaque' | 'jwt';
  tokenId: string;
  owner: string;
  scopes: readonly Scope[];
  /** When the credentials stop being valid (ms since the epoch): a token's expiry, a JWT's exp; none for a token without expiry. */
  expiresAt: number | undefined;
}
