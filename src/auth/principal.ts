import type { Scope } from '../store/store.js';

/** Who a request acts for, once its bearer token (opaque or JWT) is accepted. */
export interface Principal {
  tokenId: string;
  owner: string;
  scopes: readonly Scope[];
}
