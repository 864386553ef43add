import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { destination, pino } from 'pino';
import type { Config } from '../config.js';

/**
 * JSON lines on stdout, pretty only on a terminal. Lines are buffered (4 KiB)
 * and written asynchronously: one write per request would cost a system call
 * on the hot path. The buffer is flushed at least every second, and when the
 * process exits.
 */
export function createLogger(config: Pick<Config, 'logLevel' | 'logPretty'>): FastifyBaseLogger {
  const options = {
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', 'headers.authorization'], censor: '[redacted]' },
  };
  if (config.logPretty) {
    return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } });
  }
  const logger = pino(options, destination({ dest: 1, sync: false, minLength: 4096 }));
  timers.set(logger, setInterval(() => logger.flush(), 1000).unref());
  return logger;
}

const timers = new WeakMap<object, NodeJS.Timeout>();

/** Writes out what is buffered now (a line that must not wait for the next flush). */
export function flushLogger(logger: FastifyBaseLogger): void {
  (logger as { flush?: () => void }).flush?.();
}

/** Writes out what is buffered and stops the periodic flush. */
export function closeLogger(logger: FastifyBaseLogger): void {
  clearInterval(timers.get(logger));
  flushLogger(logger);
}

/** Whether every request gets a log line (level info or more verbose). */
export function logsEveryRequest(config: Pick<Config, 'logLevel'>): boolean {
  return config.logLevel === 'info' || config.logLevel === 'debug' || config.logLevel === 'trace';
}

// Tokens are never accepted in URLs, but a client may still put one there:
// keep it out of the logs.
const redactUrl = (url: string): string =>
  url.includes('plnt_') ? url.replace(/plnt_[A-Za-z0-9_-]*/g, 'plnt_[redacted]') : url;

/** The fields of a request's log line. */
export function requestLine(request: FastifyRequest, statusCode: number) {
  return {
    reqId: request.id,
    method: request.method,
    url: redactUrl(request.url),
    statusCode,
    owner: request.principal?.owner,
  };
}
