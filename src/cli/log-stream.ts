import type { DestinationStream } from 'pino';
import type { CommandContext } from './args.js';

/**
 * Where serve's log lines go. The executable's own stdout gets the logger's
 * buffered writer on fd 1 (undefined here); any other stdout, such as the
 * command line run in-process, gets the lines written to it.
 */
export function logStream(ctx: CommandContext): DestinationStream | undefined {
  return ctx.stdout === process.stdout ? undefined : ctx.stdout;
}
