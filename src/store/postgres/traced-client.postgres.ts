import type pg from 'pg';
import { DB_OPERATION_NAME, DB_QUERY_TEXT, DB_SYSTEM_NAME } from '../../tracing/attributes.js';
import type { Tracing } from '../../tracing/tracing.js';

// Each query a request (or a webhook delivery) makes is a client span of its
// own. @opentelemetry/instrumentation-pg would patch pg as it is first
// required, which an ES module service can only arrange with loader hooks
// before pg loads; and the tracing here starts later, only when an endpoint
// is set. Our statements carry no values in their text (parameters only), so
// the text is kept, cut short.

const MAX_QUERY_TEXT = 500;

/** The statement's first word (SELECT, INSERT, WITH, BEGIN): the span's name. */
const operation = (text: string): string => /^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';

/** `Base` (pg.Client or the client for transaction poolers) with a span around each promised query. */
export function tracedClient(Base: typeof pg.Client, tracing: Tracing): typeof pg.Client {
  return class TracedClient extends Base {
    override query(...args: unknown[]): never {
      const query = (...a: unknown[]) => (super.query as (...q: unknown[]) => never)(...a);
      const first = args[0];
      // A callback or a submittable (a cursor) is not a promise to wrap; the service uses neither on the request path.
      if (typeof args.at(-1) === 'function' || (typeof first === 'object' && first !== null && 'submit' in first))
        return query(...args);
      const text = typeof first === 'string' ? first : ((first as { text?: string } | null)?.text ?? '');
      const op = operation(text);
      return tracing.child(
        op,
        'client',
        { [DB_SYSTEM_NAME]: 'postgresql', [DB_OPERATION_NAME]: op, [DB_QUERY_TEXT]: text.slice(0, MAX_QUERY_TEXT) },
        () => query(...args) as Promise<unknown>,
      ) as never;
    }
  };
}
