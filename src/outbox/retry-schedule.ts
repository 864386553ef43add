// When a failed attempt is tried again. Exponential: 5 s after the first
// attempt, then four times longer each time, capped at 8 h; 9 retries in all,
// spread over about a day (23.6 h after the first attempt at the latest,
// 17.7 h at the earliest with jitter), then the event is given up.
const FIRST_RETRY_MS = 5_000;
const FACTOR = 4;
const MAX_DELAY_MS = 8 * 3600_000;
export const MAX_ATTEMPTS = 10;
/** A Retry-After further out than this is taken as this. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/** The nominal delay after attempt `n` (1-based) failed: 5 s, 20 s, 80 s, 5 m 20 s, 21 m 20 s, 1 h 25 m, 5 h 41 m, 8 h, 8 h. */
export function nominalDelayMs(attempt: number): number {
  return Math.min(FIRST_RETRY_MS * FACTOR ** (attempt - 1), MAX_DELAY_MS);
}

/**
 * How long to wait after attempt `attempt` failed, or undefined when it was
 * the last one. Jitter takes up to a quarter off each delay, so endpoints
 * that failed together are not retried in lockstep, and the first retry comes
 * within 5 s.
 */
export function retryDelayMs(attempt: number, random: () => number = Math.random): number | undefined {
  if (attempt >= MAX_ATTEMPTS) return undefined;
  return Math.round(nominalDelayMs(attempt) * (1 - 0.25 * random()));
}

/** A Retry-After header (delay-seconds or an HTTP date) in milliseconds from now; undefined when absent or malformed. */
export function retryAfterMs(header: string | undefined, nowMs = Date.now()): number | undefined {
  if (header === undefined) return undefined;
  const value = header.trim();
  let ms: number;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else {
    // An HTTP date names its weekday and month; a bare "-5" is no date.
    const at = /[a-z]/i.test(value) ? Date.parse(value) : NaN;
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}
