import { loadConfig } from '../config.js';
import { openCommandStore } from './store.js';
import { UsageError, settingFlags, type Command } from './args.js';

export const webhookRemove: Command = {
  name: 'webhook remove',
  positionals: true,
  usage: 'webhook remove ID [--db PATH_OR_URL]',
  summary:
    'Removes a webhook endpoint (its id from webhook list) and drops the events still waiting for it. Servers stop delivering to it at once; an attempt already under way finishes.',
  settings: ['db', 'pg-pooler'],
  async run(ctx, values, positionals) {
    if (positionals.length !== 1) throw new UsageError('give exactly one webhook id to remove');
    // mustExist: a mistyped --db is an error, not a new empty store;
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(loadConfig(settingFlags(this, values), ctx.env, {}, this.settings), {
      mustExist: true,
      existingSchema: true,
    });
    try {
      if (!(await store.webhooks.remove(positionals[0]!))) {
        ctx.stderr.write('no webhook endpoint has that id\n');
        return 1;
      }
      ctx.stderr.write('removed\n');
      return 0;
    } finally {
      await store.close();
    }
  },
};
