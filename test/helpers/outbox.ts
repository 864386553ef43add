// What webhook suites do to the outbox without a delivery loop.
import type { Store } from '../../src/store/store.js';

/** Fans the new events out to their endpoints' deliveries without claiming any (no endpoint has this key). */
export const fanOutWithoutDelivering = (store: Store) =>
  store.outbox.claim({
    keyId: 'no-such-key',
    limit: 32,
    perEndpoint: 4,
    leaseMs: 60_000,
    exclude: [],
    perOwner: 8,
    busyOwners: new Map(),
    maxPending: 10_000,
  });
