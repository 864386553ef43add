import { randomBytes } from 'node:crypto';
import { webhookKeyPath } from '../config.js';
import { refusedAddresses } from '../outbox/address-guard.js';
import { newSigningSecret, readOrCreateKeyFile } from '../outbox/secret-box.js';
import { openCommandStore } from './store.js';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../store/store.js';
import { UsageError, commandConfig, jsonFlag, listFlag, ownerFlag, type Command } from './args.js';
import { printJson } from './rows.js';

const MAX_URL_LENGTH = 2048;

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--url must be an absolute http:// or https:// URL, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--url must be an http:// or https:// URL, got ${JSON.stringify(raw)}`);
  if (url.username || url.password)
    throw new UsageError('--url must not carry a user name or password; the signature authenticates the events');
  if (url.hash) throw new UsageError('--url must not have a #fragment, which is never sent');
  if (raw.length > MAX_URL_LENGTH) throw new UsageError(`--url must be at most ${MAX_URL_LENGTH} characters`);
  return url;
}

function parseEvents(names: string[]): WebhookEventType[] {
  if (names.length === 0) throw new UsageError(`--events needs one or more of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  for (const name of names) {
    if (!WEBHOOK_EVENT_TYPES.includes(name as WebhookEventType))
      throw new UsageError(`--events: ${JSON.stringify(name)} is not one of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  }
  return WEBHOOK_EVENT_TYPES.filter((t) => names.includes(t));
}

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
    const url = parseUrl(values.url);
    const events = parseEvents(values.events === undefined ? [...WEBHOOK_EVENT_TYPES] : listFlag(values.events));
    const config = commandConfig(this, values, ctx);
    // mustExist: a mistyped --db is an error, not a new empty store.
    const store = await openCommandStore(config, { mustExist: true });
    try {
      const keyPath = webhookKeyPath(config);
      const { box, created } = readOrCreateKeyFile(keyPath);
      const id = `wh_${randomBytes(8).toString('hex')}`;
      const secret = newSigningSecret();
      await store.webhooks.add(
        { id, owner, url: url.href, events, createdAt: new Date(), keyId: box.keyId },
        box.seal(secret.key, id),
        { maxPerOwner: config.webhooksMaxEndpoints },
      );
      if (created && !values.json) {
        ctx.stderr.write(
          `created the webhook key ${keyPath} (readable by its owner only): every server needs it to sign events; ` +
            'back it up apart from the database\n',
        );
      }
      if (!values.json)
        ctx.stderr.write(`created ${id} for owner "${owner}": POST ${url.href} on ${events.join(', ')}\n`);
      for (const { address, range } of await refusedAddresses(url.hostname)) {
        ctx.stderr.write(
          `warning: ${url.hostname}${url.hostname === address ? '' : ` resolves to ${address}, which`} is a ${range} address: ` +
            'servers refuse to deliver there unless started with --webhooks-allow-private\n',
        );
      }
      if (url.protocol === 'http:')
        ctx.stderr.write('warning: not https: events travel unencrypted (their signatures still prove the sender)\n');
      if (values.json) {
        printJson(ctx.stdout, {
          id,
          owner,
          url: url.href,
          events,
          keyFile: keyPath,
          keyCreated: created,
          secret: secret.text,
        });
      } else ctx.stdout.write(`${secret.text}\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};
