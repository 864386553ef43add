import type { FastifyInstance, FastifyRequest } from 'fastify';
import { loggableUrl } from '../http/log-lines.js';
import type { ServerSpan, Tracing } from '../tracing/tracing.js';

// One server span per request, made by these hooks rather than by
// @fastify/otel: that plugin names every span "request", records the whole URL
// with its query, marks each 4xx the client caused as an error, and brings
// @opentelemetry/instrumentation's module hooks, which the service does not use.

const spans = new WeakMap<FastifyRequest, ServerSpan>();

/** trace_id and span_id of a request's span, for its access line (written after the span's context is gone). */
export function requestTraceFields(request: FastifyRequest): { trace_id: string; span_id: string } | undefined {
  const span = spans.get(request);
  return span && { trace_id: span.traceId, span_id: span.spanId };
}

/**
 * Added first, so that the span covers the token check and every refusal. The
 * request's own work runs with its span active: the hooks after this one,
 * and (since a body arrives outside that context) the handler from
 * preHandler on. The owner is read as the answer goes out, once the token
 * check has set it.
 */
export function traceRequests(app: FastifyInstance, tracing: Tracing): void {
  app.addHook('onRequest', function startSpan(request, _reply, done) {
    const span = tracing.request({
      headers: request.headers,
      method: request.method,
      route: request.is404 ? undefined : request.routeOptions.url,
      path: loggableUrl(request.url.split('?')[0]!),
    });
    spans.set(request, span);
    span.run(done);
  });
  app.addHook('preHandler', function inSpan(request, _reply, done) {
    const span = spans.get(request);
    if (span) span.run(done);
    else done();
  });
  app.addHook('onResponse', function endSpan(request, reply, done) {
    spans.get(request)?.end(reply.statusCode, request.principal?.owner);
    done();
  });
}
