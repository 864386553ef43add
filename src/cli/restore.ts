import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { restoreSqlite } from '../backup/sqlite-backup.js';
import { isPostgresUrl } from '../config.js';
import { migrateCommandStore } from './store.js';
import { UsageError, commandConfig, type Command } from './args.js';

export const restore: Command = {
  name: 'restore',
  usage: 'restore --from FILE [--force] [--db PATH]',
  summary:
    'Replaces a SQLite store with a backup, after checking the backup. Refuses a store in use, and one holding plants or tokens unless --force.',
  output: 'stderr: the store replaced and the backup it now holds.',
  settings: ['db'],
  flags: {
    from: { type: 'string', arg: 'FILE', help: 'the backup file made by plant-store backup' },
    force: { type: 'boolean', help: 'replace a store that holds plants or tokens' },
  },
  async run(ctx, values) {
    const config = commandConfig(this, values, ctx);
    if (isPostgresUrl(config.db)) throw new UsageError('restore writes SQLite stores; for PostgreSQL use pg_restore');
    if (typeof values.from !== 'string') throw new UsageError('--from FILE is required');
    const target = resolve(config.db);
    mkdirSync(dirname(target), { recursive: true });
    restoreSqlite(resolve(values.from), target, { force: values.force === true });
    // A backup from an older version gets the newer schema now, not on the next start.
    await migrateCommandStore(config);
    ctx.stderr.write(`restore: ${target} now holds the backup ${resolve(values.from)}\n`);
    return 0;
  },
};
