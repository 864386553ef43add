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

/**
 * One line of an error and what it wraps, outermost first: "fetch failed:
 * connect ECONNREFUSED 127.0.0.1:5432". A wrapped error's message is left out
 * when the line already holds it (wrappers often repeat their cause's), and so
 * are causes that are not errors.
 */
export function errorMessages(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  let line = error.message;
  for (const e of errorChain(error).slice(1)) {
    if (e instanceof Error && e.message !== '' && !line.includes(e.message)) line += `: ${e.message}`;
  }
  return line;
}
