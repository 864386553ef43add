// What a log line built from request input may hold. Anything a client sends
// is untrusted: it is truncated, a credential in it is redacted, and lines
// that a client can cause at will are sampled, so that an anonymous flood
// writes a bounded amount of log.

/** Longest piece of untrusted text (a header field, a reason) in a log line. */
export const MAX_LOGGED_TEXT = 200;
/** Longest URL in a log line, after redaction. */
export const MAX_LOGGED_URL = 512;

/** `text` cut to `max` characters, marked with "…" when cut. */
export function clip(text: string, max = MAX_LOGGED_TEXT): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

const CREDENTIAL_RUN = /[A-Za-z0-9_-]{32,}/g;

/**
 * Whether a long run of URL-safe characters mixing upper case, lower case and
 * digits is a random secret's shape (UUIDs and hex trace ids are not).
 */
function mixedCase(run: string): boolean {
  return /[A-Z]/.test(run) && /[a-z]/.test(run) && /\d/.test(run);
}

/**
 * Whether a value looks like a credential: one of our tokens (plnt_…), a JWT
 * (eyJ…), or any long run of URL-safe characters mixing upper case, lower
 * case and digits, as random secrets do.
 */
export function looksLikeSecret(value: string): boolean {
  if (/plnt_|^eyJ/i.test(value)) return true;
  for (const [run] of value.matchAll(CREDENTIAL_RUN)) if (mixedCase(run)) return true;
  return false;
}

// Query parameters whose value is a credential whatever it looks like.
const SECRET_PARAM =
  /([?&;](?:access_?token|id_?token|refresh_?token|token|jwt|api_?key|apikey|key|secret|client_?secret|password|passwd|pwd|pass|auth|authorization|bearer|sig|signature|code|session)=)[^&;#]*/gi;
// One of our tokens, a JWT (two or three dot-separated base64url parts after
// "eyJ", percent-encoded dots included), and long runs of base64url.
const TOKEN_SHAPED =
  /plnt_[A-Za-z0-9_-]*|eyJ[A-Za-z0-9_-]*(?:(?:\.|%2e)[A-Za-z0-9_-]*){1,2}|[A-Za-z0-9+_-]{32,}={0,2}/gi;

/**
 * Whether a long run is a secret's shape in a URL: letters and digits mixed,
 * unless it is a UUID or a trace id (hex, at most 32 digits), which are not
 * secrets and help to follow a request.
 */
function secretRun(run: string): boolean {
  if (!/\d/.test(run) || !/[a-z]/i.test(run)) return false;
  return !(/^[0-9a-f-]+$/i.test(run) && run.replace(/-/g, '').length <= 32);
}

// The user information of an absolute-form request target (http://user:password@host/).
const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)[^/@?#]*@/i;

/**
 * A request URL fit for a log line: anything token-shaped in its path or
 * query is redacted (our tokens, JWTs, long random-looking runs, the values
 * of parameters such as access_token or key, user information), then it is
 * cut to MAX_LOGGED_URL characters.
 */
export function loggableUrl(url: string): string {
  const redacted = url
    .replace(USERINFO, '$1[redacted]@')
    .replace(SECRET_PARAM, '$1[redacted]')
    .replace(TOKEN_SHAPED, (run) =>
      run.startsWith('plnt_') ? 'plnt_[redacted]' : /^eyJ/i.test(run) || secretRun(run) ? '[redacted]' : run,
    );
  return clip(redacted, MAX_LOGGED_URL);
}

/** What LogSampler.take says about a line that may be written. */
export interface Sampled {
  /** The first line of its kind (since it was last pushed out): write it in full, stack included. */
  first: boolean;
  /** Lines of its kind left out since the last one written. */
  omitted: number;
}

/**
 * Which of many alike log lines to write: the first of each kind, then at
 * most one per interval, saying how many were left out. Kinds must come from
 * a small set (a reason, an error class), never from raw input; past
 * `maxKinds` the oldest is forgotten.
 */
export class LogSampler {
  readonly #kinds = new Map<string, { at: number; omitted: number }>();

  constructor(
    private readonly intervalMs = 10_000,
    private readonly maxKinds = 256,
  ) {}

  /** undefined: leave this line out. */
  take(kind: string, now = performance.now()): Sampled | undefined {
    const key = clip(kind);
    const seen = this.#kinds.get(key);
    if (seen === undefined) {
      if (this.#kinds.size >= this.maxKinds) this.#kinds.delete(this.#kinds.keys().next().value!);
      this.#kinds.set(key, { at: now, omitted: 0 });
      return { first: true, omitted: 0 };
    }
    if (now - seen.at < this.intervalMs) {
      seen.omitted++;
      return undefined;
    }
    const omitted = seen.omitted;
    seen.at = now;
    seen.omitted = 0;
    return { first: false, omitted };
  }
}
