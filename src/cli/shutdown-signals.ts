import { constants } from 'node:os';
import type { ShutdownSignal, SignalSource } from './args.js';

/**
 * A repeated signal within this time of the one that began the shutdown is
 * the same request delivered twice, not an operator insisting: a terminal
 * sends Ctrl-C to every process of the group, so `npm start` forwards a copy,
 * `timeout` signals its child and then its whole group, and a cluster primary
 * passes the signal on to workers that already got it from the terminal.
 */
export const REPEAT_WINDOW_MS = 1000;

/** The conventional exit code of a process ended by `signal` (130 for SIGINT, 143 for SIGTERM). */
export const exitCodeFor = (signal: ShutdownSignal): number => 128 + constants.signals[signal];

/** What to tell the operator with the first signal. */
export const forceHint = (signal: ShutdownSignal): string =>
  signal === 'SIGINT' ? 'press Ctrl-C again to force' : 'send SIGTERM again to force';

export interface ShutdownHandlers {
  /** The first SIGINT or SIGTERM: stop gracefully. */
  drain(signal: ShutdownSignal): void;
  /** Another one, REPEAT_WINDOW_MS or more after the first: stop now. */
  force(signal: ShutdownSignal): void;
}

/** Listens for SIGINT and SIGTERM for the whole shutdown; returns a function that stops listening. */
export function onShutdownSignals(signals: SignalSource, handlers: ShutdownHandlers, now = Date.now): () => void {
  let firstAt: number | undefined;
  let forced = false;
  const listener = (signal: ShutdownSignal) => {
    if (firstAt === undefined) {
      firstAt = now();
      handlers.drain(signal);
    } else if (!forced && now() - firstAt >= REPEAT_WINDOW_MS) {
      forced = true;
      handlers.force(signal);
    }
  };
  signals.on('SIGINT', listener);
  signals.on('SIGTERM', listener);
  return () => {
    signals.off('SIGINT', listener);
    signals.off('SIGTERM', listener);
  };
}
