import { DiagLogLevel, ROOT_CONTEXT, context, diag, type DiagLogger } from '@opentelemetry/api';
import { withoutPassword } from '../db-url.js';
import type { TracingProblem } from './tracing.js';

// Imported only when tracing is on (sdk.ts). The SDK reports what goes wrong
// (an export the receiver refused or never answered) through its diag logger
// alone, which logs nothing until one is set: routed here, at warn and above.

const MAX_MESSAGE = 300;
// What the SDK reports before the service's logger is there (the exporter's start) is kept, this much of it.
const KEPT_BEFORE_REPORT = 20;
// The shortest header value masked: shorter ones would mask common words.
const MIN_SECRET = 4;

/** An absolute URL in a message. */
const URLS = /\b[a-z][a-z0-9+.-]*:\/\/[^\s'"()<>]+/gi;

const decoded = (text: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};

/**
 * The values of OTEL_EXPORTER_OTLP_HEADERS and OTEL_EXPORTER_OTLP_TRACES_HEADERS
 * (key=value pairs, often credentials), which the exporter reads itself and
 * no message may show.
 */
export function headerSecrets(env: Readonly<Record<string, string | undefined>>): string[] {
  return ['OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS'].flatMap((name) =>
    (env[name] ?? '').split(',').flatMap((pair) => {
      const value = pair.slice(pair.indexOf('=') + 1).trim();
      return [value, decoded(value)].filter((v) => v.length >= MIN_SECRET);
    }),
  );
}

/** `text` fit for the log: each header value masked, each URL without its user and password, cut short. */
export function masked(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('***');
  out = out.replace(URLS, (url) => withoutPassword(url));
  return out.length > MAX_MESSAGE ? `${out.slice(0, MAX_MESSAGE)}…` : out;
}

/** An argument of a diag call as text: strings, numbers and errors as they are, any other object by its kind only (it may hold the exporter's headers). */
function argText(arg: unknown): string {
  if (typeof arg === 'string') return arg;
  if (typeof arg === 'number' || typeof arg === 'boolean') return String(arg);
  if (arg instanceof Error) return `${arg.name}: ${arg.message}`;
  return `(${arg === null ? 'null' : typeof arg === 'object' ? (arg.constructor?.name ?? 'object') : typeof arg})`;
}

interface ReportedError {
  name?: string;
  message?: string;
  code?: string;
  data?: string;
}

/**
 * The SDK's global error handler reports an error (a failed export) as the
 * JSON of its properties, stack included: read back, it is the error's name,
 * code and message, and what the receiver answered.
 */
function reportedError(text: string): ReportedError | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== 'object' || parsed === null || !('message' in parsed || 'name' in parsed)) return undefined;
    return parsed as ReportedError;
  } catch {
    return undefined;
  }
}

/** A problem from a diag call's arguments: an error by its code or class, any other message by its words (numbers left out). */
export function problemOf(args: readonly unknown[], secrets: readonly string[]): TracingProblem {
  const text = args.map(argText).join(' ');
  const error = reportedError(text);
  if (error) {
    const name = error.name ?? 'Error';
    const code = error.code !== undefined && !(error.message ?? '').includes(error.code) ? ` (code ${error.code})` : '';
    const answer = error.data ? `; the receiver answered: ${error.data}` : '';
    return {
      kind: `${name} ${error.code ?? ''}`.trim().slice(0, 100),
      message: masked(`${name}: ${error.message ?? ''}${code}${answer}`, secrets),
    };
  }
  return { kind: text.replace(/\d+/g, '#').slice(0, 100), message: masked(text, secrets) };
}

/**
 * Sets OpenTelemetry's diag logger (for the process) to one that hands each
 * warning and error, as a TracingProblem, to the report set later; until
 * then, the first few are kept. It never throws: a logger that threw would
 * be reported to itself again.
 */
export function routeDiagnostics(secrets: readonly string[]): {
  reportTo(report: (problem: TracingProblem) => void): void;
  stop(): void;
} {
  let report: ((problem: TracingProblem) => void) | undefined;
  const kept: TracingProblem[] = [];
  const take = (...args: unknown[]) => {
    try {
      const problem = problemOf(args, secrets);
      // Outside any span: the batch's timer may run in the context of the request that started it, whose span the
      // line would otherwise name.
      if (report) context.with(ROOT_CONTEXT, () => report!(problem));
      else if (kept.length < KEPT_BEFORE_REPORT) kept.push(problem);
    } catch {
      // Nothing else can be told about it.
    }
  };
  const ignore = () => {};
  const logger: DiagLogger = { error: take, warn: take, info: ignore, debug: ignore, verbose: ignore };
  diag.setLogger(logger, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  return {
    reportTo(next) {
      report = next;
      for (const problem of kept.splice(0)) context.with(ROOT_CONTEXT, () => next(problem));
    },
    stop() {
      report = undefined;
      diag.disable();
    },
  };
}
