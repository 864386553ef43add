// How SQLite reports what went wrong, in one place: which failed writes say
// "the store cannot take writes now" rather than "this write is wrong"
// (shared by the writer thread and its caller), and which say another
// connection holds the lock.

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
    (isDiskFull(code) ||
      code === STORE_FILE_GONE ||
      code.startsWith('SQLITE_READONLY') ||
      code.startsWith('SQLITE_CANTOPEN') ||
      code.startsWith('SQLITE_IOERR'))
  );
}

/** The disk (or the file system's quota) is full: a write may still fit once space is freed. */
export function isDiskFull(code: string | undefined): boolean {
  return code === 'SQLITE_FULL';
}

/** Another connection holds the lock this one asked for, after busy_timeout if any. */
export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
}
