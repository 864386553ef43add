import http from 'node:http';
import https from 'node:https';
import { HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE, SERVER_ADDRESS, SERVER_PORT } from '../tracing/attributes.js';
import { tracing } from '../tracing/tracing.js';
import { RefusedAddressError, addressRefusal, bareHost, checkLiteralHost, guardedLookup } from './address-guard.js';

/** What one delivery attempt came to. */
export type AttemptResult =
  | { kind: 'delivered'; status: number }
  | { kind: 'gone'; status: 410 }
  | { kind: 'failed'; status?: number; error: string; retryAfter?: string }
  /** Stopped by the caller's signal (shutdown): not a real attempt. */
  | { kind: 'aborted' };

export interface AttemptOptions {
  timeoutMs: number;
  allowPrivate: boolean;
  signal: AbortSignal;
}

// The receiver's answer is not used beyond its status and Retry-After; read
// only this much of its body, so a huge one costs nothing.
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * POSTs one signed event. Redirects are not followed (a 3xx is a failure),
 * and the whole attempt (connect, answer, reading what we read of the body)
 * has one time limit. Unless private addresses are allowed, the host is
 * resolved here, checked, and connected to at the checked address.
 */
export function attemptDelivery(
  url: string,
  headers: Record<string, string>,
  body: string,
  options: AttemptOptions,
): Promise<AttemptResult> {
  const traces = tracing();
  if (traces === undefined) return attemptOnce(url, headers, body, options);
  // A span of its own (a delivery is not part of the request that wrote the
  // event), whose traceparent the receiver gets. Its attributes name the
  // host only: a path or a query may hold the receiver's secret.
  const target = URL.canParse(url) ? new URL(url) : undefined;
  const attributes = {
    [HTTP_REQUEST_METHOD]: 'POST',
    [SERVER_ADDRESS]: target && bareHost(target.hostname),
    [SERVER_PORT]: target && Number(target.port || (target.protocol === 'https:' ? 443 : 80)),
  };
  return traces.client('POST', attributes, async (span) => {
    const traced = { ...headers };
    traces.inject(traced);
    const result = await attemptOnce(url, traced, body, options);
    if ('status' in result && result.status !== undefined)
      span.setAttributes({ [HTTP_RESPONSE_STATUS_CODE]: result.status });
    if (result.kind !== 'delivered')
      span.fail(result.kind === 'failed' && result.status ? String(result.status) : result.kind);
    return result;
  });
}

function attemptOnce(
  url: string,
  headers: Record<string, string>,
  body: string,
  { timeoutMs, allowPrivate, signal }: AttemptOptions,
): Promise<AttemptResult> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not an http(s) URL');
      if (!allowPrivate) checkLiteralHost(target.hostname);
    } catch (error) {
      resolve({ kind: 'failed', error: (error as Error).message });
      return;
    }
    if (signal.aborted) return resolve({ kind: 'aborted' });
    let settled = false;
    const finish = (result: AttemptResult) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      resolve(result);
    };
    const payload = Buffer.from(body);
    const request = (target.protocol === 'https:' ? https : http).request(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length), 'user-agent': 'plant-store-webhooks/1' },
      agent: false,
      ...(allowPrivate ? {} : { lookup: guardedLookup }),
    });
    // Also bounds the reading of the body after the answer came: the
    // connection never outlives the attempt's time limit.
    const timer = setTimeout(() => {
      request.destroy();
      finish({ kind: 'failed', error: `no answer within ${timeoutMs} ms` });
    }, timeoutMs);
    request.on('close', () => clearTimeout(timer));
    const onAbort = () => {
      request.destroy();
      finish({ kind: 'aborted' });
    };
    signal.addEventListener('abort', onAbort);
    // The last check, on the address actually connected to, before a byte is
    // sent: whatever path led there (a literal, a lookup, a form the checks
    // above read differently), a refused address gets nothing.
    if (!allowPrivate) {
      request.on('socket', (socket) => {
        socket.prependOnceListener('connect', () => {
          const address = socket.remoteAddress ?? '';
          const range = addressRefusal(address);
          if (!range) return;
          const error = new RefusedAddressError(bareHost(target.hostname), address, range);
          request.destroy(error);
          finish({ kind: 'failed', error: error.message });
        });
      });
    }
    request.on('error', (error) => finish({ kind: 'failed', error: error.message || String(error) }));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      const retryAfter = response.headers['retry-after'];
      // The status decides; the body is read (and dropped) only to end the exchange cleanly.
      finish(
        status >= 200 && status < 300
          ? { kind: 'delivered', status }
          : status === 410
            ? { kind: 'gone', status }
            : {
                kind: 'failed',
                status,
                error:
                  status >= 300 && status < 400
                    ? `answered ${status}; redirects are not followed`
                    : `answered ${status}`,
                ...(typeof retryAfter === 'string' ? { retryAfter } : {}),
              },
      );
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > MAX_RESPONSE_BYTES) request.destroy();
      });
      response.on('error', () => {});
    });
    request.end(payload);
  });
}
