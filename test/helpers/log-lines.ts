import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';

/** A logger at info that keeps every line it writes, for tests that read what was logged. */
export function keptLog(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  return { log, lines };
}
