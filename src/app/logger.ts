import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { levels, pino, type DestinationStream } from 'pino';
import type { Config } from '../config.js';
import { isServerFailure } from '../http/errors.js';
import { LogSampler, loggableUrl } from '../http/log-lines.js';
import { errorChain } from '../store/error-causes.js';
import { tracing } from '../tracing/tracing.js';
import { LogSink } from './log-sink.js';
import { requestTraceFields } from './request-spans.js';

/**
 * JSON lines on stdout, pretty only on a terminal. Lines are buffered (4 KiB)
 * and written asynchronously: one write per request would cost a system call
 * on the hot path. A line waits at most a second, and is written before the
 * process exits (closeLogger). A stdout that fails drops lines, never the service (LogSink). With `stream` (the CLI run in-process) lines go there instead.
 */
export function createLogger(
  config: Pick<Config, 'logLevel' | 'logPretty'>,
  stream?: DestinationStream,
): FastifyBaseLogger {
  const traces = tracing();
  const options = {
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
    // With tracing on, a line written in a span's context names it (trace_id, span_id).
    ...(traces && { mixin: () => traces.logFields() ?? {} }),
  };
  if (stream) return pino(options, stream);
  if (config.logPretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } });
  }
  return pino(options, new LogSink({ fd: 1, minLength: 4096, maxDelayMs: 1000 }));
}

/** Writes out what is buffered now (a line that must not wait for the next flush). */
export function flushLogger(logger: FastifyBaseLogger): void {
  (logger as { flush?: () => void }).flush?.();
}

/**
 * Resolves once what `logger` (or the logger it is a child of, as Fastify's
 * app.log is) has buffered is written: the process is about to exit, and
 * process.exit() would drop a write still under way. pino hands the callback
 * to its destination's flush; a destination without one is written at once.
 */
export function closeLogger(logger: FastifyBaseLogger): Promise<void> {
  const { flush } = logger as { flush?: (done: () => void) => void };
  if (!flush) return Promise.resolve();
  return new Promise((resolve) => flush.call(logger, () => resolve()));
}

/**
 * The fields of a request's log line. Tokens are never accepted in URLs, but
 * a client may still put one there (or a JWT, or a key): the URL is redacted
 * and cut to a bounded length. With tracing on, the line names the request's span.
 */
export function requestLine(request: FastifyRequest, statusCode: number) {
  return {
    reqId: request.id,
    client: request.client,
    method: request.method,
    url: loggableUrl(request.url),
    statusCode,
    owner: request.principal?.owner,
    ...requestTraceFields(request),
  };
}

// pino's own level numbers; 'silent' logs nothing.
const logsAt = (config: Pick<Config, 'logLevel'>, level: 'info' | 'warn') =>
  config.logLevel !== 'silent' && levels.values[level]! >= levels.values[config.logLevel]!;

/** Whether every request gets an access line: --access-log, at level info or more verbose. */
export function logsEveryRequest(config: Pick<Config, 'accessLog' | 'logLevel'>): boolean {
  return config.accessLog && logsAt(config, 'info');
}

const roundMs = (ms: number) => Math.round(ms * 100) / 100;

/** What a 5xx cause's kind is: the class and message (cut short) of the error and of each error it wraps. */
function failureKind(error: unknown): string {
  if (!(error instanceof Error)) return String(error).slice(0, 200);
  return errorChain(error)
    .filter((e) => e instanceof Error)
    .map((e) => `${e.name}: ${e.message.slice(0, 100)}`)
    .join(' <- ');
}

/**
 * Keeps repeated failures from filling the log: a full disk refuses every
 * write the same way, and a stack per refused request says nothing new. The
 * first failure of a kind is logged with its stack; the same kind again
 * within 10 s is counted, and the next line of that kind after that says how
 * many there were.
 */
export class FailureLog {
  readonly #sampler = new LogSampler(10_000);

  /** Whether to log this failure, and with what: the error itself the first time, after that its kind and a count. */
  sample(error: unknown): { err: unknown; similarBefore?: number } | undefined {
    const kind = failureKind(error);
    const taken = this.#sampler.take(kind);
    if (taken === undefined) return undefined;
    if (taken.first) return { err: error };
    return {
      err: { type: error instanceof Error ? error.name : typeof error, message: kind },
      similarBefore: taken.omitted,
    };
  }

  /** The error for a line that is written anyway (--access-log): with its stack only the first time. */
  stack(error: unknown): unknown {
    const taken = this.#sampler.take(failureKind(error));
    return taken?.first
      ? error
      : { type: error instanceof Error ? error.name : typeof error, message: failureKind(error) };
  }
}

/**
 * The per-request lines. Fastify calls requestCompleted for every response
 * whatever the settings, so deciding here adds no hook to the hot path. By
 * default only a request slower than --slow-request-ms gets a line (warn);
 * 5xx causes are logged by the error handler. With --access-log every
 * request gets one (a server failure at error, with its cause; a 501, which
 * the request caused, like a 4xx).
 */
class RequestLog extends LogController {
  constructor(
    private readonly log: FastifyBaseLogger,
    private readonly everyRequest: boolean,
    private readonly slowMs: number,
    private readonly skip: (request: FastifyRequest) => boolean,
  ) {
    super({ disableRequestLogging: true });
  }

  /** Each kind of failure's stack is logged once per interval, not once per request. */
  private readonly failures = new FailureLog();

  override requestCompleted(_error: unknown, request: FastifyRequest, reply: FastifyReply): void {
    if (this.skip(request)) return;
    const ms = reply.elapsedTime;
    if (this.everyRequest) {
      const line = { ...requestLine(request, reply.statusCode), responseTime: roundMs(ms) };
      if (isServerFailure(reply.statusCode))
        this.log.error({ ...line, err: this.failures.stack(request.failure) }, 'request failed');
      else if (ms >= this.slowMs) this.log.warn(line, 'slow request');
      else this.log.info(line, 'request completed');
    } else if (ms >= this.slowMs) {
      this.log.warn({ ...requestLine(request, reply.statusCode), responseTime: roundMs(ms) }, 'slow request');
    }
  }
}

/** @param skip requests that get no line of their own (refused while shutting down) */
export function requestLog(
  config: Pick<Config, 'accessLog' | 'logLevel' | 'slowRequestMs'>,
  log: FastifyBaseLogger,
  skip: (request: FastifyRequest) => boolean,
): LogController {
  const slowMs = config.slowRequestMs > 0 && logsAt(config, 'warn') ? config.slowRequestMs : Infinity;
  return new RequestLog(log, logsEveryRequest(config), slowMs, skip);
}
