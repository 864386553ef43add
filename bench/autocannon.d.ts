// autocannon ships no types: just the part of its API the bench uses.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  export interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
    onResponse?: (status: number, body: string, context: unknown, headers?: Record<string, string>) => void;
  }

  interface Result {
    requests: { total: number };
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
  }

  function autocannon(options: {
    url: string;
    connections: number;
    duration: number;
    timeout: number;
    requests: Request[];
  }): EventEmitter & PromiseLike<Result>;
  export default autocannon;
}
