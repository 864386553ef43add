import { createHash } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  createReadStream,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import Database from 'better-sqlite3';
import { PRIVATE_FILE, PRIVATE_FOLDER } from '../store/sqlite/db-connect.sqlite.js';
import { isBusy } from '../store/sqlite/errors.sqlite.js';
import {
  SQLITE_MIGRATIONS,
  expectedSchema,
  schemaObjects,
  type SchemaObject,
} from '../store/sqlite/schema-shape.sqlite.js';

export class BackupError extends Error {
  override name = 'BackupError';
}

/**
 * A refusal that another command line fixes (a new --out, --force,
 * --without-checksum, a --from that names a file); nothing was changed.
 */
export class BackupOptionError extends BackupError {
  override name = 'BackupOptionError';
}

const TABLES = ['plants', 'tokens'];

function fsyncPath(path: string): void {
  const fd = openSync(path, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The bytes of a store: its file and its write-ahead log, which may hold most recent writes. */
function storeBytes(path: string): number {
  const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
  return size(path) + size(`${path}-wal`);
}

/**
 * Copies the SQLite store at `from` to a new file `to`, consistent as of the
 * moment the copy starts, while servers keep writing. `onProgress` gets the
 * bytes written so far and the store's size (an upper bound) about once a second.
 */
export async function backupSqlite(
  from: string,
  to: string,
  onProgress: (written: number, total: number) => void = () => {},
): Promise<void> {
  if (!existsSync(from)) throw new BackupError(`no SQLite store at ${from}`);
  if (existsSync(to)) throw new BackupOptionError(`${to} exists already; choose a new file for the backup`);
  const partial = `${to}.partial`;
  rmSync(partial, { force: true });
  // A backup holds what the store holds: created 0600 (VACUUM INTO fills an empty file).
  closeSync(openSync(partial, 'wx', PRIVATE_FILE));
  const total = storeBytes(from);
  const worker = new Worker(new URL('./vacuum-into.worker.js', import.meta.url), {
    workerData: { from, to: partial },
  });
  const timer = setInterval(() => {
    if (existsSync(partial)) onProgress(statSync(partial).size, total);
  }, 1000);
  try {
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
      worker.once('exit', (code) => (code === 0 ? resolve() : reject(new BackupError(`backup stopped (${code})`))));
    });
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    clearInterval(timer);
  }
  onProgress(statSync(partial).size, total);
  fsyncPath(partial);
  // The checksum first: a backup file never stands without its checksum.
  const sum = `${to}${CHECKSUM_SUFFIX}`;
  writeFileSync(`${sum}.partial`, `${await sha256(partial)}  ${basename(to)}\n`, { mode: PRIVATE_FILE });
  fsyncPath(`${sum}.partial`);
  renameSync(`${sum}.partial`, sum);
  renameSync(partial, to);
  fsyncPath(dirname(to));
}

/** Next to each backup: its SHA-256, in the format of sha256sum (so `sha256sum -c` checks it too). */
export const CHECKSUM_SUFFIX = '.sha256';

function sha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(hash.digest('hex')));
  });
}

/** Why the backup's checksum file does not vouch for it, or undefined when it does (or there is none). */
async function checksumProblem(path: string) {
  const sum = `${path}${CHECKSUM_SUFFIX}`;
  if (!existsSync(sum)) return undefined;
  const expected = /^([0-9a-f]{64})\s/.exec(readFileSync(sum, 'utf8'))?.[1];
  if (!expected) return `${sum} does not hold a SHA-256 checksum`;
  if ((await sha256(path)) !== expected)
    return `${path} does not match its checksum ${sum}: it changed after the backup`;
  return undefined;
}

/**
 * Why the backup's schema is not the one this version's migrations make, or
 * undefined when it is the same, object for object (tables, indexes, triggers,
 * views): a backup must not bring in code (a trigger, a view) of its own.
 */
async function schemaProblem(path: string, db: Database.Database): Promise<string | undefined> {
  let applied: string[];
  try {
    applied = db.prepare<[], string>('SELECT name FROM schema_migrations ORDER BY name').pluck().all();
  } catch {
    return `${path} is not a Plant Store backup (no schema_migrations table)`;
  }
  const known = SQLITE_MIGRATIONS.slice(0, applied.length);
  if (applied.length === 0 || applied.some((name, i) => name !== known[i])) {
    const unknown = applied.find((name) => !SQLITE_MIGRATIONS.includes(name));
    return unknown
      ? `${path} has the schema migration ${unknown}, which this version does not know (made by a newer version?)`
      : `${path} has an incomplete list of schema migrations`;
  }
  const key = (o: SchemaObject) => `${o.type} ${o.name}`;
  const expected = new Map((await expectedSchema(applied.at(-1)!)).map((o) => [key(o), o]));
  const actual = new Map(schemaObjects(db).map((o) => [key(o), o]));
  const problems: string[] = [];
  for (const [k, o] of actual) {
    const e = expected.get(k);
    if (!e) problems.push(`${k} is not part of the Plant Store schema`);
    else if (e.sql !== o.sql || e.tbl_name !== o.tbl_name) problems.push(`${k} differs from the Plant Store schema`);
  }
  for (const k of expected.keys()) if (!actual.has(k)) problems.push(`${k} is missing`);
  if (problems.length === 0) return undefined;
  const shown = problems.slice(0, 5).join('; ') + (problems.length > 5 ? `; and ${problems.length - 5} more` : '');
  return `${path} does not have the Plant Store schema, so it is not restored: ${shown}`;
}

/** Why `path` is not a usable Plant Store backup, as the error restore throws, or undefined when it is. */
export async function checkBackup(
  path: string,
  { withoutChecksum }: { withoutChecksum: boolean } = { withoutChecksum: false },
): Promise<BackupError | undefined> {
  if (!existsSync(path)) return new BackupOptionError(`no file at ${path}`);
  const sum = `${path}${CHECKSUM_SUFFIX}`;
  if (!withoutChecksum && !existsSync(sum)) {
    return new BackupOptionError(
      `${sum} is missing: plant-store backup writes it next to each backup; ` +
        'add --without-checksum to restore a backup made without one (by an older version)',
    );
  }
  const problem = await contentProblem(path);
  return problem === undefined ? undefined : new BackupError(problem);
}

/** Why the file at `path` does not hold a Plant Store backup, or undefined when it does. */
async function contentProblem(path: string): Promise<string | undefined> {
  const checksum = await checksumProblem(path);
  if (checksum) return checksum;
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch (error) {
    return `${path} is not a SQLite database (${(error as Error).message})`;
  }
  try {
    const check = db.pragma('integrity_check', { simple: true });
    if (check !== 'ok') return `${path} is damaged: ${String(check)}`;
    const tables = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => r.name),
    );
    const missing = TABLES.filter((t) => !tables.has(t));
    if (missing.length > 0) return `${path} is not a Plant Store backup (no ${missing.join(' or ')} table)`;
    return await schemaProblem(path, db);
  } catch (error) {
    return `${path} cannot be read: ${(error as Error).message}`;
  } finally {
    db.close();
  }
}

/** True when another connection (a server, a CLI) has the store open. */
function inUse(path: string): boolean {
  const db = new Database(path, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 0');
    // Every connection to a WAL database holds a shared lock on it while
    // open, so an exclusive lock is granted only when nobody else is there.
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
    db.exec('COMMIT');
    return false;
  } catch (error) {
    if (isBusy(error)) return true;
    throw error;
  } finally {
    db.close();
  }
}

function isEmpty(path: string): boolean {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set(
      db
        .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
        .all()
        .map((r) => r.name),
    );
    return TABLES.every((t) => !tables.has(t) || db.prepare(`SELECT 1 FROM ${t} LIMIT 1`).get() === undefined);
  } finally {
    db.close();
  }
}

/**
 * Replaces the store at `to` with the backup `from`: the backup is checked
 * first, a store in use is never replaced, and one that holds plants or
 * tokens only with `force`. The swap is a rename, so a crash leaves either
 * the old store or the restored one.
 */
export async function restoreSqlite(
  from: string,
  to: string,
  { force, withoutChecksum = false }: { force: boolean; withoutChecksum?: boolean },
): Promise<void> {
  const problem = await checkBackup(from, { withoutChecksum });
  if (problem) throw problem;
  if (existsSync(to)) {
    if (inUse(to)) throw new BackupError(`${to} is in use by a running server or command; stop it first`);
    if (!force && !isEmpty(to))
      throw new BackupOptionError(`${to} holds plants or tokens; add --force to replace them`);
  }
  mkdirSync(dirname(to), { recursive: true, mode: PRIVATE_FOLDER });
  const partial = `${to}.restoring`;
  copyFileSync(from, partial);
  chmodSync(partial, PRIVATE_FILE);
  fsyncPath(partial);
  for (const suffix of ['-wal', '-shm', '-journal']) rmSync(`${to}${suffix}`, { force: true });
  renameSync(partial, to);
  fsyncPath(dirname(to));
}
