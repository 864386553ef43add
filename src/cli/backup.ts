import { resolve } from 'node:path';
import { backupSqlite } from '../backup/sqlite-backup.js';
import { isPostgresUrl } from '../config.js';
import { statSync } from 'node:fs';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';

const MiB = 1024 * 1024;

export const backup: Command = {
  name: 'backup',
  usage: 'backup --out FILE [--json] [--db PATH]',
  summary:
    'Copies a SQLite store to a new file while servers keep serving; the copy is consistent as of its start. For PostgreSQL use pg_dump.',
  output:
    'stderr: progress, then the file written and the time taken. With --json, stdout: {"out", "checksum", "bytes", "seconds"} and no progress. Exit code 2 when the --out file exists already.',
  settings: ['db'],
  flags: {
    out: { type: 'string', arg: 'FILE', help: 'the new backup file (must not exist)' },
    json: jsonFlag('the backup file, its size in bytes and the time taken'),
  },
  async run(ctx, values) {
    const { db } = commandConfig(this, values, ctx);
    if (isPostgresUrl(db)) {
      throw new UsageError(
        'backup copies SQLite stores; for PostgreSQL use pg_dump (it takes a consistent snapshot without stopping writers), or plant-store export',
      );
    }
    if (typeof values.out !== 'string') throw new UsageError('--out FILE is required');
    const out = resolve(values.out);
    const started = Date.now();
    await backupSqlite(resolve(db), out, (written, total) => {
      if (values.json) return;
      ctx.stderr.write(
        `backup: ${(written / MiB).toFixed(1)} MiB written (store is ${(total / MiB).toFixed(1)} MiB)\n`,
      );
    });
    const seconds = (Date.now() - started) / 1000;
    if (values.json) printJson(ctx.stdout, { out, checksum: `${out}.sha256`, bytes: statSync(out).size, seconds });
    else ctx.stderr.write(`backup: ${out} and its checksum ${out}.sha256 written in ${seconds.toFixed(1)} s\n`);
    return 0;
  },
};
