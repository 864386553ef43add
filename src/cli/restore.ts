import { resolve } from 'node:path';
import { restoreSqlite } from '../backup/sqlite-backup.js';
import { isPostgresUrl } from '../config.js';
import { migrateCommandStore } from './store.js';
import { UsageError, commandConfig, type Command } from './args.js';

export const restore: Command = {
  name: 'restore',
  usage: 'restore --from FILE [--force] [--without-checksum] [--db PATH]',
  summary:
    'Replaces a SQLite store with a backup, after checking the backup: its checksum (FILE.sha256, written by plant-store backup), its integrity, and that its schema is exactly the one this version makes (no table, index, trigger or view of its own). Refuses a store in use, and one holding plants or tokens unless --force.',
  output:
    'stderr: the store replaced and the backup it now holds. Exit code 1 when the backup fails a check (named) or the store is in use; 2 when --from names no file, or the store holds plants or tokens without --force, or the backup has no checksum without --without-checksum.',
  settings: ['db'],
  flags: {
    from: { type: 'string', arg: 'FILE', help: 'the backup file made by plant-store backup' },
    force: { type: 'boolean', help: 'replace a store that holds plants or tokens' },
    'without-checksum': {
      type: 'boolean',
      help: 'restore a backup that has no BACKUP.sha256 next to it (made by an older version); its schema is still checked',
    },
  },
  async run(ctx, values) {
    const config = commandConfig(this, values, ctx);
    if (isPostgresUrl(config.db)) throw new UsageError('restore writes SQLite stores; for PostgreSQL use pg_restore');
    if (typeof values.from !== 'string') throw new UsageError('--from FILE is required');
    const target = resolve(config.db);
    await restoreSqlite(resolve(values.from), target, {
      force: values.force === true,
      withoutChecksum: values['without-checksum'] === true,
    });
    // A backup from an older version gets the newer schema now, not on the next start.
    await migrateCommandStore(config);
    ctx.stderr.write(`restore: ${target} now holds the backup ${resolve(values.from)}\n`);
    return 0;
  },
};
