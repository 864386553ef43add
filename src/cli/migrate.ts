import { loadConfig } from '../config.js';
import { settingFlags, type Command } from './args.js';
import { migrateCommandStore } from './store.js';

export const migrate: Command = {
  name: 'migrate',
  usage: 'migrate [--db PATH_OR_URL]',
  summary:
    "Brings the store's schema to the latest version (serve also does this on start). Safe to run while servers are up.",
  settings: ['db', 'pg-pooler'],
  async run(ctx, values) {
    const { applied } = await migrateCommandStore(loadConfig(settingFlags(this, values), ctx.env, {}, this.settings));
    ctx.stderr.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'schema is up to date\n');
    return 0;
  },
};
