// A webhook endpoint on 127.0.0.1 for the webhook suites: records every
// request it gets, and answers as the test's `answer` function says (a
// status with headers, or no answer at all until released).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  /** performance.now() when the request's body was complete. */
  at: number;
  /** 1 for the first request carrying this webhook-id, 2 for the second, … */
  attempt: number;
  /** The status answered, or undefined when the request was held and never answered. */
  status?: number;
}

export type Answer = { status: number; headers?: Record<string, string> } | 'hold';

export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  answer: (request: ReceivedRequest) => Answer = () => ({ status: 204 });
  readonly #server = http.createServer((req, res) => this.#handle(req, res));
  readonly #held = new Set<http.ServerResponse>();
  readonly #attempts = new Map<string, number>();
  readonly #watchers = new Set<() => void>();
  #port = 0;

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    this.#port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  get port(): number {
    return this.#port;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.#port}${path}`;
  }

  /** Requests whose answer was 2xx. */
  delivered(): ReceivedRequest[] {
    return this.requests.filter((r) => r.status !== undefined && r.status >= 200 && r.status < 300);
  }

  /** Resolves once `predicate` holds for the requests so far; rejects after timeoutMs with what came. */
  waitFor(predicate: (requests: ReceivedRequest[]) => boolean, timeoutMs: number, what: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(this.requests)) return;
        clearTimeout(timer);
        this.#watchers.delete(check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.#watchers.delete(check);
        const seen = this.requests.map((r) => `${r.headers['webhook-id']}#${r.attempt}:${r.status ?? 'held'}`);
        const shown = seen.length > 10 ? [`${seen.length} requests, the last:`, ...seen.slice(-10)] : seen;
        reject(
          new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received: ${shown.join(' ') || 'nothing'}`),
        );
      }, timeoutMs);
      this.#watchers.add(check);
      check();
    });
  }

  /** Drops the held requests' connections. */
  releaseHeld(): void {
    for (const res of this.#held) res.destroy();
    this.#held.clear();
  }

  async stop(): Promise<void> {
    this.releaseHeld();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v;
      const id = headers['webhook-id'] ?? '';
      const attempt = (this.#attempts.get(id) ?? 0) + 1;
      this.#attempts.set(id, attempt);
      const request: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: performance.now(),
        attempt,
      };
      this.requests.push(request);
      const answer = this.answer(request);
      if (answer === 'hold') {
        this.#held.add(res);
      } else {
        request.status = answer.status;
        res.writeHead(answer.status, answer.headers ?? {}).end();
      }
      for (const w of [...this.#watchers]) w();
    });
  }
}
