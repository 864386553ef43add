import { addWebhook, checkEvents, checkWebhookUrl } from '../manage/webhooks.js';
import { openCommandStore } from './store.js';
import { WEBHOOK_EVENT_TYPES } from '../store/store.js';
import { UsageError, commandConfig, jsonFlag, listFlag, ownerFlag, type Command } from './args.js';
import { printJson } from './rows.js';

export const webhookAdd: Command = {
  name: 'webhook add',
  usage: 'webhook add --owner NAME --url URL [--events TYPE[,TYPE...]] [--json] [--db PATH|URL]',
  summary:
    'Registers a webhook endpoint: each plant the owner creates or deletes is POSTed to URL as a signed Standard Webhooks event. Only the signing secret goes to stdout (its last line), so SECRET=$(plant-store webhook add ...) works; details and warnings go to stderr (with --json, the secret and the details go to stdout as one JSON object; warnings still go to stderr). The secret is shown this once; it is stored encrypted with the webhook key, a file created on first use.',
  output:
    'stdout: the signing secret alone. stderr: the id, owner, URL and events, and warnings (a private address, plain http). With --json, stdout: {"id", "owner", "url", "events", "keyFile", "keyCreated", "secret"}; warnings still on stderr.',
  settings: ['db', 'pg-pooler', 'webhook-key-file', 'webhooks-max-endpoints'],
  flags: {
    owner: { type: 'string', arg: 'NAME', help: 'owner whose plant events go to the URL (required)' },
    url: { type: 'string', arg: 'URL', help: 'http:// or https:// URL that receives the events (required)' },
    events: {
      type: 'string',
      arg: 'TYPE[,TYPE...]',
      help: 'the event types to send, separated by commas',
      default: WEBHOOK_EVENT_TYPES.join(','),
    },
    json: jsonFlag('the signing secret, the id, owner, URL, events and webhook key file'),
  },
  async run(ctx, values) {
    const owner = ownerFlag(values);
    if (typeof values.url !== 'string') throw new UsageError('--url is required');
    const url = checkWebhookUrl(values.url, '--url');
    const events = checkEvents(
      values.events === undefined ? [...WEBHOOK_EVENT_TYPES] : listFlag(values.events),
      '--events',
    );
    const config = commandConfig(this, values, ctx);
    // mustExist: a mistyped --db is an error, not a new empty store.
    const store = await openCommandStore(config, { mustExist: true });
    try {
      const added = await addWebhook(store, config, { owner, url, events });
      if (added.keyCreated && !values.json) {
        ctx.stderr.write(
          `created the webhook key ${added.keyFile} (readable by its owner only): every server needs it to sign events; ` +
            'back it up apart from the database\n',
        );
      }
      if (!values.json)
        ctx.stderr.write(`created ${added.id} for owner "${owner}": POST ${added.url} on ${events.join(', ')}\n`);
      for (const warning of added.warnings) ctx.stderr.write(`warning: ${warning}\n`);
      if (values.json) {
        const { warnings: _warnings, ...shown } = added;
        printJson(ctx.stdout, shown);
      } else ctx.stdout.write(`${added.secret}\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};
