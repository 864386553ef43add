import { commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { migrateCommandStore } from './store.js';

export const migrate: Command = {
  name: 'migrate',
  usage: 'migrate [--json] [--db PATH|URL]',
  summary:
    "Brings the store's schema to the latest version (serve also does this on start). Safe to run while servers are up.",
  output:
    'stderr: the migrations applied, or that the schema is up to date. With --json, stdout: {"applied": [names]}.',
  settings: ['db', 'pg-pooler'],
  flags: { json: jsonFlag('the migrations applied (an empty list when the schema was up to date)') },
  async run(ctx, values) {
    const { applied } = await migrateCommandStore(commandConfig(this, values, ctx));
    if (values.json) printJson(ctx.stdout, { applied });
    else ctx.stderr.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'schema is up to date\n');
    return 0;
  },
};
