// Where the SQLite store's file is checked: deleted or replaced while the
// server uses it, and missing where a store existed before.
//
// SQLite keeps using an open file after it is deleted or replaced: writes
// would be acknowledged into a file nobody can open again. The server compares
// the file's device and inode with the ones it opened, on every write batch
// (in the writer thread) and on every readiness check.
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface FileIdentity {
  dev: number;
  ino: number;
}

/** The device and inode of the file at `path`. */
export function fileIdentity(path: string): FileIdentity {
  const { dev, ino } = statSync(path);
  return { dev, ino };
}

/** What is wrong with the store file at `path`, opened as `opened`; undefined while it is still that file. */
export function storeFileProblem(path: string, opened: FileIdentity): string | undefined {
  let now: FileIdentity;
  try {
    now = fileIdentity(path);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT'
      ? `the store file ${path} was deleted while the server was using it`
      : `the store file ${path} cannot be checked: ${(error as Error).message}`;
  }
  return now.dev === opened.dev && now.ino === opened.ino
    ? undefined
    : `the store file ${path} was replaced by another file while the server was using it`;
}

/** Left next to a store file once it exists; its name does not match `plants.db*`, so `rm plants.db*` keeps it. */
export function markerPath(path: string): string {
  return join(dirname(path), `.${basename(path)}.marker`);
}

/**
 * The store file is not there: a tool that only works on an existing store was
 * pointed at none, or one existed before and a new, empty one is not created in
 * its place.
 */
export class StoreFileMissingError extends Error {
  override name = 'StoreFileMissingError';
}

/**
 * Refuses to create a store file at `path` when there are signs that one
 * existed there: its marker, or a write-ahead log without its database.
 * Starting over on an empty file would hide the loss and hand out a new
 * admin token as if nothing had happened.
 */
export function refuseToStartOver(path: string): void {
  if (existsSync(path)) return;
  const marker = markerPath(path);
  const sign = existsSync(marker)
    ? `a store existed there before (marker file ${marker})`
    : existsSync(`${path}-wal`)
      ? `its write-ahead log ${path}-wal is still there`
      : undefined;
  if (sign === undefined) return;
  throw new StoreFileMissingError(
    `the store file ${path} is missing, but ${sign}. Refusing to start over with an empty store: ` +
      `restore the file from a backup, or delete ${existsSync(marker) ? marker : `${path}-wal and ${path}-shm`} ` +
      'to create a new, empty store.',
  );
}

/** Records that a store exists at `path` (best effort: a read-only folder only loses this protection). */
export function leaveMarker(path: string): void {
  try {
    writeFileSync(
      markerPath(path),
      `A Plant Store database lives next to this file (${basename(path)}).\n` +
        'While this marker exists, the server refuses to create a new, empty store in its place.\n',
      { flag: 'wx' },
    );
  } catch {
    // EEXIST: already there; anything else: a folder the server cannot write.
  }
}
