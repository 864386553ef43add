import { redeliverWebhook } from '../manage/webhooks.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { openCommandStore } from './store.js';

export const webhookRedeliver: Command = {
  name: 'webhook redeliver',
  positionals: true,
  usage: 'webhook redeliver ID [--json] [--db PATH|URL]',
  summary:
    'Queues the failed deliveries of an endpoint (its id from webhook list) again: every event given up after its last attempt, and kept since (--events-retention-ms), is due at once, oldest first, with the same webhook-id. A running server sends them, signed as always.',
  output:
    'stderr: how many deliveries were queued again. With --json, stdout: {"id", "redelivered"}. Exit code 1 when no endpoint has that id.',
  settings: ['db', 'pg-pooler'],
  flags: { json: jsonFlag('how many were queued again') },
  async run(ctx, values, positionals) {
    if (positionals.length !== 1) throw new UsageError('give exactly one webhook id to redeliver');
    const config = commandConfig(this, values, ctx);
    // mustExist: a mistyped --db is an error, not a new empty store;
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(config, { mustExist: true, existingSchema: true });
    try {
      const result = await redeliverWebhook(store.webhooks, positionals[0]!);
      if (values.json) printJson(ctx.stdout, result);
      else
        ctx.stderr.write(
          `${result.redelivered} failed ${result.redelivered === 1 ? 'delivery' : 'deliveries'} of ${result.id} queued again\n`,
        );
      return 0;
    } finally {
      await store.close();
    }
  },
};
