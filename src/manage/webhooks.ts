// Webhook endpoint management, the one home of what `plant-store webhook
// add|list|remove|test|redeliver` and the admin API's /admin/webhooks do.
import { randomBytes } from 'node:crypto';
import { webhookKeyPath, type Config } from '../config.js';
import { refusedAddresses } from '../outbox/address-guard.js';
import { attemptDelivery, type AttemptResult } from '../outbox/attempt.js';
import { signedHeaders } from '../outbox/event-body.js';
import { newSigningSecret, readKeyFile, readOrCreateKeyFile } from '../outbox/secret-box.js';
import {
  WEBHOOK_EVENT_TYPES,
  type Store,
  type WebhookEndpointRecord,
  type WebhookEventType,
  type WebhookStore,
} from '../store/store.js';
import { ManageError, shownId } from './manage-error.js';

const MAX_URL_LENGTH = 2048;

export function checkWebhookUrl(raw: string, field: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ManageError(
      'invalid',
      `${field} must be an absolute http:// or https:// URL, got ${JSON.stringify(raw.slice(0, 200))}`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ManageError(
      'invalid',
      `${field} must be an http:// or https:// URL, got ${JSON.stringify(raw.slice(0, 200))}`,
    );
  if (url.username || url.password)
    throw new ManageError(
      'invalid',
      `${field} must not carry a user name or password; the signature authenticates the events`,
    );
  if (url.hash) throw new ManageError('invalid', `${field} must not have a #fragment, which is never sent`);
  if (raw.length > MAX_URL_LENGTH)
    throw new ManageError('invalid', `${field} must be at most ${MAX_URL_LENGTH} characters`);
  return url;
}

export function checkEvents(names: readonly string[], field: string): WebhookEventType[] {
  if (names.length === 0)
    throw new ManageError('invalid', `${field} needs one or more of ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  for (const name of names) {
    if (!WEBHOOK_EVENT_TYPES.includes(name as WebhookEventType))
      throw new ManageError(
        'invalid',
        `${field}: ${JSON.stringify(name)} is not one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      );
  }
  return WEBHOOK_EVENT_TYPES.filter((t) => names.includes(t));
}

export type WebhookSettings = Pick<Config, 'db' | 'webhookKeyFile' | 'webhooksMaxEndpoints'>;

export interface AddedWebhook {
  id: string;
  owner: string;
  url: string;
  events: WebhookEventType[];
  keyFile: string;
  keyCreated: boolean;
  /** The signing secret, shown this once. */
  secret: string;
  /** What the operator should know: a private address, plain http. */
  warnings: string[];
}

/** Registers an endpoint, its secret sealed with the webhook key (created on first use). */
export async function addWebhook(
  store: Pick<Store, 'webhooks'>,
  settings: WebhookSettings,
  opts: { owner: string; url: URL; events: WebhookEventType[] },
): Promise<AddedWebhook> {
  const keyFile = webhookKeyPath(settings);
  const { box, created } = readOrCreateKeyFile(keyFile);
  const id = `wh_${randomBytes(8).toString('hex')}`;
  const secret = newSigningSecret();
  const { owner, url, events } = opts;
  await store.webhooks.add(
    { id, owner, url: url.href, events, createdAt: new Date(), keyId: box.keyId },
    box.seal(secret.key, id),
    { maxPerOwner: settings.webhooksMaxEndpoints },
  );
  const warnings: string[] = [];
  for (const { address, range } of await refusedAddresses(url.hostname)) {
    warnings.push(
      `${url.hostname}${url.hostname === address ? '' : ` resolves to ${address}, which`} is a ${range} address: ` +
        'servers refuse to deliver there unless started with --webhooks-allow-private',
    );
  }
  if (url.protocol === 'http:')
    warnings.push('not https: events travel unencrypted (their signatures still prove the sender)');
  return { id, owner, url: url.href, events, keyFile, keyCreated: created, secret: secret.text, warnings };
}

/** Every endpoint (or one owner's), with its waiting events; secrets are never read. */
export async function listWebhooks(
  webhooks: WebhookStore,
  owner?: string,
): Promise<(WebhookEndpointRecord & { pending: number })[]> {
  const all = await webhooks.list();
  return owner === undefined ? all : all.filter((e) => e.owner === owner);
}

export async function removeWebhook(webhooks: WebhookStore, id: string): Promise<void> {
  if (!(await webhooks.remove(id))) throw new ManageError('not-found', `no webhook endpoint has the id ${shownId(id)}`);
}

export interface WebhookRedelivery {
  id: string;
  /** Failed deliveries queued again. */
  redelivered: number;
}

/**
 * Queues every failed delivery of an endpoint again (each given up after its
 * last attempt, and kept for --events-retention-ms since): a running
 * server's delivery loop sends them, oldest event first, signed with the
 * same webhook-id as before. 0 when none failed, or the endpoint is disabled.
 */
export async function redeliverWebhook(webhooks: WebhookStore, id: string): Promise<WebhookRedelivery> {
  const redelivered = await webhooks.redeliver(id);
  if (redelivered === undefined) throw new ManageError('not-found', `no webhook endpoint has the id ${shownId(id)}`);
  return { id, redelivered };
}

export interface WebhookTestResult {
  /** The webhook-id the test event carried. */
  messageId: string;
  delivered: boolean;
  /** The receiver's HTTP status, when it answered. */
  status: number | null;
  error: string | null;
}

/**
 * Sends one signed `webhook.test` event to an endpoint now, as a delivery
 * would (the same signature, address checks and time limit), and says how the
 * receiver answered. It goes through no outbox: nothing is retried or stored.
 */
export async function testWebhook(
  webhooks: WebhookStore,
  settings: Pick<Config, 'db' | 'webhookKeyFile' | 'webhookTimeoutMs' | 'webhooksAllowPrivate'>,
  id: string,
): Promise<WebhookTestResult> {
  const found = await webhooks.get(id);
  if (!found) throw new ManageError('not-found', `no webhook endpoint has the id ${shownId(id)}`);
  const keyFile = webhookKeyPath(settings);
  const box = readKeyFile(keyFile);
  if (!box || box.keyId !== found.endpoint.keyId)
    throw new ManageError(
      'invalid',
      `the webhook key ${keyFile} is not the key this endpoint's secret was sealed with`,
    );
  const secret = box.open(found.sealedSecret, id);
  const messageId = `msg_${randomBytes(16).toString('hex')}`;
  const body = JSON.stringify({
    type: 'webhook.test',
    timestamp: new Date().toISOString(),
    data: { endpoint: id, owner: found.endpoint.owner },
  });
  const result: AttemptResult = await attemptDelivery(
    found.endpoint.url,
    signedHeaders(secret, messageId, body),
    body,
    {
      timeoutMs: settings.webhookTimeoutMs,
      allowPrivate: settings.webhooksAllowPrivate,
      signal: new AbortController().signal,
    },
  );
  if (result.kind === 'delivered') return { messageId, delivered: true, status: result.status, error: null };
  if (result.kind === 'gone')
    return { messageId, delivered: false, status: 410, error: 'the receiver answered 410 Gone' };
  if (result.kind === 'failed')
    return { messageId, delivered: false, status: result.status ?? null, error: result.error };
  return { messageId, delivered: false, status: null, error: 'stopped' };
}
