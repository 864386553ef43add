import type { FastifyInstance, FastifyServerOptions, onResponseHookHandler } from 'fastify';
import type { Series } from '../metrics/histogram.js';
import { UNMATCHED_ROUTE, httpMalformedRequests, httpRequestDuration } from '../metrics/metrics.js';

// HTTP request metrics: one histogram observation per request, in an
// onResponse hook. Each route gets a hook of its own that knows the route's
// template, so recording reads no per-request route options (that getter
// builds an object on every call) and hashes no label strings: a series is
// looked up by status code and method in a small map of numbers.

const METHOD_SLOTS: Readonly<Record<string, number>> = {
  GET: 0,
  HEAD: 1,
  POST: 2,
  PUT: 3,
  PATCH: 4,
  DELETE: 5,
  OPTIONS: 6,
};
const OTHER_METHOD = 7;

/** Series of one route by status code and method. */
class RouteSeries {
  readonly #byKey = new Map<number, Series>();

  constructor(readonly route: string) {}

  get(method: string, status: number): Series {
    const slot = METHOD_SLOTS[method] ?? OTHER_METHOD;
    const key = status * 8 + slot;
    let series = this.#byKey.get(key);
    if (series === undefined) {
      series = httpRequestDuration.series(slot === OTHER_METHOD ? 'other' : method, this.route, String(status));
      this.#byKey.set(key, series);
    }
    return series;
  }
}

const RECORDER = Symbol('records request metrics');

function recorder(route: string): onResponseHookHandler {
  const series = new RouteSeries(route);
  const record: onResponseHookHandler = (request, reply, done) => {
    series.get(request.method, reply.statusCode).observe(reply.elapsedTime / 1000);
    done();
  };
  return Object.assign(record, { [RECORDER]: true });
}

const unmatched = new RouteSeries(UNMATCHED_ROUTE);

/**
 * Records every request's method, route template, status and latency. Call it
 * before any route is declared.
 */
export function recordHttpMetrics(app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    const hooks = route.onResponse === undefined ? [] : [route.onResponse].flat();
    if (hooks.some((h) => RECORDER in h)) return;
    route.onResponse = [...hooks, recorder(route.url)];
  });
  // The not-found handler has no onRoute; Fastify runs the app's global
  // hooks for it, and this one returns at once for routed requests.
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched.get(request.method, reply.statusCode).observe(reply.elapsedTime / 1000);
    done();
  });
}

type FrameworkErrors = NonNullable<FastifyServerOptions['frameworkErrors']>;

/** Errors Fastify raises before routing (a malformed URL) run no hooks: count them here. */
export function recordingFrameworkErrors(handler: FrameworkErrors): FrameworkErrors {
  return (error, request, reply) => {
    handler(error, request, reply);
    unmatched.get(request.method, reply.statusCode).observe(0);
  };
}

/** A handler that answers straight on the socket; returns the status answered with, or undefined for none. */
type SocketAnswer<Args extends unknown[]> = (...args: Args) => number | undefined;

/**
 * Requests answered straight on the socket never reach Fastify: the ones
 * Node's HTTP parser refuses (the server's clientErrorHandler) and CONNECT
 * (its `connect` listener). Count the ones answered as malformed, with the
 * status the handler answered. A timeout (408) is not malformed, and a
 * connection closed without an answer (idle, or gone) is not a request.
 */
export function countingClientErrors<Args extends unknown[]>(handler: SocketAnswer<Args>): SocketAnswer<Args> {
  return (...args) => {
    const status = handler(...args);
    if (status !== undefined && status !== 408) httpMalformedRequests.inc({ status_code: String(status) });
    return status;
  };
}
