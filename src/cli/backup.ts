import { resolve } from 'node:path';
import { backupSqlite } from '../backup/sqlite-backup.js';
import { isPostgresUrl, loadConfig } from '../config.js';
import { UsageError, settingFlags, type Command } from './args.js';

const MiB = 1024 * 1024;

export const backup: Command = {
  name: 'backup',
  usage: 'backup --out FILE [--db PATH]',
  summary:
    'Copies a SQLite store to a new file while servers keep serving; the copy is consistent as of its start. For PostgreSQL use pg_dump.',
  settings: ['db'],
  flags: { out: { type: 'string', help: 'the new backup file (must not exist)' } },
  async run(ctx, values) {
    const { db } = loadConfig(settingFlags(this, values), ctx.env, {}, this.settings);
    if (isPostgresUrl(db)) {
      throw new UsageError(
        'backup copies SQLite stores; for PostgreSQL use pg_dump (it takes a consistent snapshot without stopping writers), or plant-store export',
      );
    }
    if (typeof values.out !== 'string') throw new UsageError('--out FILE is required');
    const out = resolve(values.out);
    const started = Date.now();
    await backupSqlite(resolve(db), out, (written, total) =>
      ctx.stderr.write(
        `backup: ${(written / MiB).toFixed(1)} MiB written (store is ${(total / MiB).toFixed(1)} MiB)\n`,
      ),
    );
    ctx.stderr.write(
      `backup: ${out} and its checksum ${out}.sha256 written in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
    return 0;
  },
};
