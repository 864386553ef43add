// What the rest of the service sees of tracing, without loading OpenTelemetry:
// `tracing()` is undefined unless serve started it (start.ts), so that with
// tracing off each place that could make a span costs one check of a variable.

/** The attributes of a span: OpenTelemetry's semantic-convention names. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** A span still open, as the code doing its work sees it. */
export interface OpenSpan {
  setAttributes(attributes: SpanAttributes): void;
  /** The work failed: the span's status is an error, of this kind (error.type: a class or a code, never a message). */
  fail(errorType: string): void;
}

/** The server span of one HTTP request. */
export interface ServerSpan extends OpenSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** Runs `fn` with this span active, so that the store's spans and log lines made in it belong to it. */
  run<T>(fn: () => T): T;
  /**
   * Ends the span with the answer's status (a 5xx is an error, a 4xx is not:
   * the client's) and, only with --trace-owner, the caller's owner.
   */
  end(status: number, owner: string | undefined): void;
}

/** What a request span is made of (HTTP semantic conventions). */
export interface RequestFacts {
  /** The incoming headers: a W3C traceparent there continues its trace. */
  headers: Record<string, string | string[] | undefined>;
  method: string;
  /** The route template (/plants/:id), undefined when no route matched. */
  route: string | undefined;
  /** The path, without the query, cut short and with what looks like a secret redacted. */
  path: string;
}

export interface Tracing {
  /** A server span for one request. */
  request(facts: RequestFacts): ServerSpan;
  /**
   * `work` in a child span of the active span; `work` alone when no span is
   * active (a store's own polls and timers make no traces of their own).
   */
  child<T>(name: string, kind: 'client' | 'internal', attributes: SpanAttributes, work: () => Promise<T>): Promise<T>;
  /** `work` in a client span of its own: a child of the active span, or the root of a new trace. */
  client<T>(name: string, attributes: SpanAttributes, work: (span: OpenSpan) => Promise<T>): Promise<T>;
  /** Adds the active span's W3C traceparent (and tracestate) to outgoing headers. */
  inject(headers: Record<string, string>): void;
  /** trace_id and span_id of the active span, for a log line; undefined outside any span. */
  logFields(): { trace_id: string; span_id: string } | undefined;
  /** Sends the spans not yet sent and stops. */
  shutdown(): Promise<void>;
}

let current: Tracing | undefined;

/** The tracing in use, or undefined when it is off. */
export const tracing = (): Tracing | undefined => current;

export function setTracing(next: Tracing | undefined): void {
  current = next;
}
