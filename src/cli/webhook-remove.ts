import { openCommandStore } from './store.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { removeWebhook } from '../manage/webhooks.js';

export const webhookRemove: Command = {
  name: 'webhook remove',
  positionals: true,
  usage: 'webhook remove ID [--json] [--db PATH|URL]',
  summary:
    'Removes a webhook endpoint (its id from webhook list) and drops the events still waiting for it. Servers stop delivering to it at once; an attempt already under way finishes.',
  output: 'stderr: removed. With --json, stdout: {"removed": true, "id"}. Exit code 1 when no endpoint has that id.',
  settings: ['db', 'pg-pooler'],
  flags: { json: jsonFlag('the id removed') },
  async run(ctx, values, positionals) {
    if (positionals.length !== 1) throw new UsageError('give exactly one webhook id to remove');
    // mustExist: a mistyped --db is an error, not a new empty store;
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(commandConfig(this, values, ctx), {
      mustExist: true,
      existingSchema: true,
    });
    try {
      // A ManageError when no endpoint has the id: main() prints it after "plant-store webhook remove: ".
      await removeWebhook(store.webhooks, positionals[0]!);
      if (values.json) printJson(ctx.stdout, { removed: true, id: positionals[0]! });
      else ctx.stderr.write('removed\n');
      return 0;
    } finally {
      await store.close();
    }
  },
};
