// Which failed writes say "the store cannot take writes now" rather than
// "this write is wrong", shared by the writer thread and its caller.

/** The code a write fails with once the store file was deleted or replaced (store-file.ts). */
export const STORE_FILE_GONE = 'PLANT_STORE_FILE_GONE';

/**
 * Disk full, a read-only file or file system, an I/O error, a file that
 * cannot be opened or is gone: nothing is wrong with the write itself, and
 * the same write may succeed once the cause is fixed. Such writes answer 503
 * with Retry-After, the writer reopens its connection (a connection opened
 * on a read-only file stays read-only), and readiness fails until a write
 * succeeds again.
 */
export function cannotWrite(code: string | undefined): boolean {
  return (
    code !== undefined &&
    (code === 'SQLITE_FULL' ||
      code === STORE_FILE_GONE ||
      code.startsWith('SQLITE_READONLY') ||
      code.startsWith('SQLITE_CANTOPEN') ||
      code.startsWith('SQLITE_IOERR'))
  );
}
