import type { FastifyBaseLogger } from 'fastify';
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

/** Writes out what is buffered and stops the periodic flush. */
export function closeLogger(logger: FastifyBaseLogger): void {
  clearInterval(timers.get(logger));
  (logger as { flush?: () => void }).flush?.();
}

// Tokens are never accepted in URLs, but a client may still put one there:
// keep it out of the logs.
export const redactUrl = (url: string): string =>
  url.includes('plnt_') ? url.replace(/plnt_[A-Za-z0-9_-]*/g, 'plnt_[redacted]') : url;
