import { write, writeSync } from 'node:fs';
import { logLinesDropped } from '../metrics/metrics.js';

export interface LogSinkOptions {
  /** The file descriptor lines go to (1: stdout). */
  fd: number;
  /** Lines wait until this many characters are buffered, or the next flush (0: each line goes at once). */
  minLength: number;
  /** With minLength: a buffered line waits at most this long before it is written. */
  maxDelayMs?: number;
  /** Written with writeSync, in order, before write() returns (a process that logs rarely). */
  sync?: boolean;
  /** Characters that may wait unwritten; lines past it are dropped (a reader far behind). */
  maxPending?: number;
  /** Where the one notice that lines are being dropped goes: fd 2, when it can be written. */
  notice?: (text: string) => void;
}

const newlines = (text: string | Buffer): number => {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return n;
};

// How long flush(done) waits for the lines buffered so far before it gives them up.
const DRAIN_MS = 5000;

const toStderr = (text: string) => {
  try {
    writeSync(2, text);
  } catch {
    // stderr is broken too: the metric still counts.
  }
};

/**
 * Where the service's log lines go: a destination that never stops the
 * service. Writes go out asynchronously (fs.write runs off the main thread),
 * so a full disk, a closed pipe or an I/O error cannot block a request or a
 * signal; lines the destination refuses are dropped, counted in
 * plant_store_log_lines_dropped_total, and said once on stderr. pino's own
 * destination (sonic-boom) retries instead, and its synchronous flush waits
 * in Atomics.wait, for ever on /dev/full.
 */
export class LogSink {
  readonly #fd: number;
  readonly #minLength: number;
  readonly #sync: boolean;
  readonly #maxPending: number;
  readonly #notice: (text: string) => void;
  readonly #maxDelayMs: number | undefined;
  /** Writes out what waits in the buffer once maxDelayMs have passed since it began to wait. */
  #delay: NodeJS.Timeout | undefined;
  #buffer = '';
  /** What a short write or EAGAIN left over, written before the buffer. */
  #rest: Buffer | undefined;
  #writing = false;
  #told = false;

  constructor(options: LogSinkOptions) {
    this.#fd = options.fd;
    this.#minLength = options.minLength;
    this.#sync = options.sync ?? false;
    this.#maxPending = options.maxPending ?? 16 * 1024 * 1024;
    this.#notice = options.notice ?? toStderr;
    this.#maxDelayMs = options.maxDelayMs;
  }

  /** pino's DestinationStream: one line, with its newline. */
  write(line: string): boolean {
    if (this.#sync) {
      this.#writeNow(line);
      return true;
    }
    if (this.#buffer.length + line.length > this.#maxPending) {
      this.#dropped(1, 'the log destination is too far behind');
      return true;
    }
    this.#buffer += line;
    if (this.#buffer.length >= this.#minLength) this.#writeOut();
    else if (this.#delay === undefined && this.#maxDelayMs !== undefined) {
      this.#delay = setTimeout(this.#delayed, this.#maxDelayMs).unref();
    }
    return true;
  }

  readonly #delayed = (): void => {
    this.#delay = undefined;
    this.#writeOut();
  };

  /**
   * pino's logger.flush(done): writes out what is buffered, and calls `done`
   * once it has been written (or dropped), or after DRAIN_MS, so that a
   * process about to exit can wait for its last lines.
   */
  flush(done?: (error?: Error) => void): void {
    void this.drain(DRAIN_MS).then(() => done?.());
  }

  /**
   * Resolves once every line so far has been written (or dropped), or after
   * `timeoutMs`: a reader that takes nothing cannot hold the exit.
   */
  drain(timeoutMs: number): Promise<void> {
    if (this.#idle()) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, timeoutMs);
      const waiting = this.#drained;
      function done() {
        clearTimeout(timer);
        waiting.delete(done);
        resolve();
      }
      waiting.add(done);
      this.#writeOut();
    });
  }

  readonly #drained = new Set<() => void>();

  #idle(): boolean {
    return !this.#writing && this.#buffer === '' && this.#rest === undefined;
  }

  #take(): Buffer {
    const pending = this.#rest ? Buffer.concat([this.#rest, Buffer.from(this.#buffer)]) : Buffer.from(this.#buffer);
    this.#rest = undefined;
    this.#buffer = '';
    return pending;
  }

  #writeNow(data: string | Buffer): void {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    let done = 0;
    try {
      while (done < bytes.length) done += writeSync(this.#fd, bytes, done);
    } catch (error) {
      this.#dropped(newlines(bytes.subarray(done)), (error as NodeJS.ErrnoException).code ?? String(error));
    }
  }

  #writeOut(): void {
    if (this.#writing || (this.#buffer === '' && this.#rest === undefined)) return;
    const chunk = this.#take();
    this.#writing = true;
    write(this.#fd, chunk, 0, chunk.length, null, (error, written) => {
      this.#writing = false;
      if (error?.code === 'EAGAIN') {
        // A non-blocking pipe that is full: try again shortly, keeping the lines.
        this.#rest = chunk;
        setTimeout(() => this.#writeOut(), 10).unref();
        return;
      }
      if (error) this.#dropped(newlines(chunk), error.code ?? error.message);
      else if (written < chunk.length) this.#rest = chunk.subarray(written);
      const draining = this.#drained.size > 0;
      if (this.#rest !== undefined || this.#buffer.length >= this.#minLength || (draining && this.#buffer !== ''))
        this.#writeOut();
      else if (draining) for (const done of [...this.#drained]) done();
    });
  }

  #dropped(lines: number, why: string): void {
    logLinesDropped.inc(lines);
    if (this.#told) return;
    this.#told = true;
    this.#notice(
      `plant-store: log lines are being dropped: writing them to ${this.#fd === 1 ? 'stdout' : `fd ${this.#fd}`} ` +
        `failed (${why}); the service keeps serving, and plant_store_log_lines_dropped_total counts the lines lost\n`,
    );
  }
}
