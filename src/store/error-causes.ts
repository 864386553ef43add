/** The most errors errorChain returns: deeper chains are not worth reading, and a cycle must end. */
const MAX_ERRORS = 10;

/**
 * An error and what it wraps: its `cause`, and the members of an
 * AggregateError (Node reports a failed connect to a name with several
 * addresses as one), outermost first, each once, at most ten.
 */
export function errorChain(error: unknown): unknown[] {
  const out: unknown[] = [];
  const queue = [error];
  while (queue.length > 0 && out.length < MAX_ERRORS) {
    const e = queue.shift();
    if (e === undefined || e === null || out.includes(e)) continue;
    out.push(e);
    if (e instanceof AggregateError) queue.push(...(e.errors as unknown[]));
    if (e instanceof Error) queue.push(e.cause);
  }
  return out;
}
