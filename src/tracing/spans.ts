import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_URL_PATH,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { OpenSpan, ServerSpan, SpanAttributes, Tracing } from './tracing.js';

// Imported only when tracing is on (sdk.ts).

/** user.id of the semantic conventions (still experimental there, so not imported). */
const ATTR_USER_ID = 'user.id';

const KINDS = { client: SpanKind.CLIENT, internal: SpanKind.INTERNAL } as const;

const errorType = (error: unknown): string =>
  (error as { code?: unknown })?.code !== undefined && typeof (error as { code: unknown }).code === 'string'
    ? (error as { code: string }).code
    : error instanceof Error
      ? error.name
      : typeof error;

function open(span: Span): OpenSpan {
  return {
    setAttributes: (attributes) => span.setAttributes(attributes),
    fail(type) {
      span.setAttribute(ATTR_ERROR_TYPE, type);
      span.setStatus({ code: SpanStatusCode.ERROR });
    },
  };
}

/** Ends the span when `work` settles; a rejection marks it failed by the error's kind (no message: it may hold data). */
async function settle<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    open(span).fail(errorType(error));
    throw error;
  } finally {
    span.end();
  }
}

/** The Tracing the service uses, over OpenTelemetry's API and the tracer of the SDK started in sdk.ts. */
export function apiTracing(tracer: Tracer, traceOwner: boolean, shutdown: () => Promise<void>): Tracing {
  return {
    request({ headers, method, route, path }): ServerSpan {
      const parent = propagation.extract(ROOT_CONTEXT, headers);
      const span = tracer.startSpan(
        route === undefined ? method : `${method} ${route}`,
        {
          kind: SpanKind.SERVER,
          attributes: {
            [ATTR_HTTP_REQUEST_METHOD]: method,
            [ATTR_URL_PATH]: path,
            [ATTR_URL_SCHEME]: 'http',
            ...(route !== undefined && { [ATTR_HTTP_ROUTE]: route }),
          },
        },
        parent,
      );
      const active = trace.setSpan(parent, span);
      const { traceId, spanId } = span.spanContext();
      return {
        ...open(span),
        traceId,
        spanId,
        run: (fn) => context.with(active, fn),
        end(status, owner) {
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status);
          if (traceOwner && owner !== undefined) span.setAttribute(ATTR_USER_ID, owner);
          if (status >= 500) {
            span.setAttribute(ATTR_ERROR_TYPE, String(status));
            span.setStatus({ code: SpanStatusCode.ERROR });
          }
          span.end();
        },
      };
    },
    child(name, kind, attributes, work) {
      const parent = context.active();
      if (trace.getSpan(parent) === undefined) return work();
      return tracer.startActiveSpan(name, { kind: KINDS[kind], attributes }, parent, (span) => settle(span, work));
    },
    client(name, attributes: SpanAttributes, work) {
      return tracer.startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, (span) =>
        settle(span, () => work(open(span))),
      );
    },
    inject(headers) {
      propagation.inject(context.active(), headers);
    },
    logFields() {
      const ids = trace.getSpan(context.active())?.spanContext();
      return ids && isSpanContextValid(ids) ? { trace_id: ids.traceId, span_id: ids.spanId } : undefined;
    },
    shutdown,
  };
}
