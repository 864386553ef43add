import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { ConfigError } from './schema.js';

/** The most a file named by a setting may hold: configuration, URL, key and secret files are all small. */
export const OPERATOR_FILE_MAX_BYTES = 1024 * 1024;

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ELOOP: 'too many links',
  ENOTDIR: 'a part of the path is not a folder',
  ENXIO: 'a socket or a device without a reader',
};

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

/**
 * The text of a file a setting names (--config, --db-file, a key or secret
 * file): a regular file, or a link to one, of at most 1 MiB, read as UTF-8
 * with a byte order mark dropped. Anything else is refused with a
 * ConfigError that starts with `setting` (where the path came from: a flag,
 * a variable, a key of the configuration file) and says why, at once:
 *
 * - it is opened without blocking, so that a FIFO without a writer does not
 *   hold the start-up for ever, and checked on the open descriptor (fstat),
 *   so that what is checked is what is read;
 * - at most 1 MiB and one byte are read, so a file that grows meanwhile, or
 *   that says it is smaller than it is, is refused too.
 *
 * With `missingOk`, a file that does not exist is undefined instead (a
 * webhook key made on first use).
 */
export function readOperatorFile(path: string, setting: string): string;
export function readOperatorFile(path: string, setting: string, options: { missingOk: true }): string | undefined;
export function readOperatorFile(path: string, setting: string, options?: { missingOk: true }): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    if (code === 'ENOENT' && options?.missingOk) return undefined;
    throw new ConfigError(`${setting}: cannot read ${path} (${REASONS[code] ?? code})`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new ConfigError(`${setting}: ${path} is ${kindOf(stats)}, not a regular file`);
    const tooLarge = () =>
      new ConfigError(`${setting}: ${path} is larger than 1 MiB, the most a file named by a setting may hold`);
    if (stats.size > OPERATOR_FILE_MAX_BYTES) throw tooLarge();
    const buffer = Buffer.alloc(OPERATOR_FILE_MAX_BYTES + 1);
    let length = 0;
    while (length < buffer.length) {
      const n = readSync(fd, buffer, length, buffer.length - length, null);
      if (n === 0) break;
      length += n;
    }
    if (length > OPERATOR_FILE_MAX_BYTES) throw tooLarge();
    const text = buffer.toString('utf8', 0, length);
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw new ConfigError(`${setting}: cannot read ${path} (${REASONS[code] ?? code})`);
  } finally {
    closeSync(fd);
  }
}
