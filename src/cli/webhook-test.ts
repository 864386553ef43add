import { testWebhook } from '../manage/webhooks.js';
import { UsageError, commandConfig, jsonFlag, type Command } from './args.js';
import { printJson } from './rows.js';
import { CliError } from './store-errors.js';
import { openCommandStore } from './store.js';

export const webhookTest: Command = {
  name: 'webhook test',
  positionals: true,
  usage: 'webhook test ID [--json] [--db PATH|URL]',
  summary:
    "Sends one signed webhook.test event to an endpoint (its id from webhook list) now, from this machine, and says how the receiver answered. It is signed with the endpoint's secret like every event, checked against the same addresses, and neither stored nor retried.",
  output:
    'stderr: delivered, with the status, or why not. With --json, stdout: {"messageId", "delivered", "status", "error"}. Exit code 1 when the receiver did not answer 2xx or no endpoint has that id.',
  settings: ['db', 'pg-pooler', 'webhook-key-file', 'webhook-timeout-ms', 'webhooks-allow-private'],
  flags: { json: jsonFlag('how the receiver answered') },
  async run(ctx, values, positionals) {
    if (positionals.length !== 1) throw new UsageError('give exactly one webhook id to test');
    const config = commandConfig(this, values, ctx);
    // mustExist: a mistyped --db is an error, not a new empty store;
    // existingSchema: a database that is not ours gets no tables.
    const store = await openCommandStore(config, { mustExist: true, existingSchema: true });
    try {
      const result = await testWebhook(store.webhooks, config, positionals[0]!);
      if (values.json) printJson(ctx.stdout, result);
      if (!result.delivered && !values.json)
        throw new CliError(`not delivered: ${result.status === null ? '' : `${result.status}: `}${result.error ?? ''}`);
      if (!values.json) ctx.stderr.write(`delivered ${result.messageId}: the receiver answered ${result.status}\n`);
      return result.delivered ? 0 : 1;
    } finally {
      await store.close();
    }
  },
};
