// Retry schedules for the delivery loops of the webhook suites: the real one
// (retry-schedule.ts), and the same shortened tenfold, for suites whose
// retries would otherwise wait seconds (DeliveryLoop's retryDelayMs option).
import { retryDelayMs } from '../../src/outbox/retry-schedule.js';

export interface RetryTiming {
  /** The wait after failed attempt n, as retry-schedule.ts retryDelayMs (with its jitter from `random`). */
  retryDelayMs: (attempt: number, random?: () => number) => number | undefined;
  /** A Retry-After, in seconds, longer than any first retry of that schedule. */
  retryAfterS: number;
}

/** The real schedule: the first retry 3.75 to 5 s after the first attempt. */
export const REAL_RETRIES: RetryTiming = { retryDelayMs, retryAfterS: 7 };

/** The real schedule shortened tenfold: the first retry 375 to 500 ms after the first attempt. */
export const TENFOLD_RETRIES: RetryTiming = {
  retryDelayMs: (attempt, random) => {
    const ms = retryDelayMs(attempt, random);
    return ms === undefined ? undefined : Math.round(ms / 10);
  },
  retryAfterS: 1,
};
