import { createHmac } from 'node:crypto';
import type { ClaimedDelivery } from '../store/store.js';

/**
 * The Standard Webhooks payload of an event. Written by hand: the plant id is
 * an int64 and must appear as an exact JSON number, which JSON.stringify
 * cannot write for a bigint. The same row always gives the same bytes, so
 * every attempt carries the same body.
 */
export function eventBody(d: Pick<ClaimedDelivery, 'type' | 'plantId' | 'name' | 'tag' | 'occurredAt'>): string {
  let data = `{"id":${d.plantId.toString()}`;
  if (d.name !== null) data += `,"name":${JSON.stringify(d.name)}`;
  if (d.tag !== null) data += `,"tag":${JSON.stringify(d.tag)}`;
  data += '}';
  const timestamp = new Date(d.occurredAt).toISOString();
  return `{"type":${JSON.stringify(d.type)},"timestamp":"${timestamp}","data":${data}}`;
}

/** The Standard Webhooks headers of one attempt: v1 signature = base64 HMAC-SHA256 of "id.timestamp.body". */
export function signedHeaders(secret: Buffer, id: string, body: string, nowMs = Date.now()): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000).toString();
  const signature = createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('base64');
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': timestamp,
    'webhook-signature': `v1,${signature}`,
  };
}
