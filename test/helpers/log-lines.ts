import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** A stream that keeps every line written to it, for tests that read what was logged. */
export function keptLines(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { stream, lines };
}

/** A logger at info that keeps every line it writes, for tests that read what was logged. */
export function keptLog(): { log: Logger; lines: string[] } {
  const { stream, lines } = keptLines();
  return { log: pino({ level: 'info' }, stream), lines };
}
