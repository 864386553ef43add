/**
 * Responses that stay open on purpose (live event streams): the whole-request
 * deadline (app/connection-limits.ts) leaves them alone. Their routes bound
 * their cost themselves.
 */
const longLived = new WeakSet<object>();

export function markLongLived(response: object): void {
  longLived.add(response);
}

export function isLongLived(response: object): boolean {
  return longLived.has(response);
}
