import type { Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import { errorResponse, errors } from '../http/errors.js';
import { SECURITY_HEADERS } from '../http/headers.js';
import { isLongLived } from '../http/long-lived.js';

export type ConnectionLimits = Pick<
  Config,
  'headersTimeoutMs' | 'requestTimeoutMs' | 'keepAliveTimeoutMs' | 'maxConnections'
>;

/**
 * How often Node looks for connections whose request head or body is late,
 * and how often the deadline sweep below runs: a tenth of the head timeout,
 * at most a second.
 */
function checkInterval(limits: ConnectionLimits): number {
  return Math.max(10, Math.min(1000, Math.floor(limits.headersTimeoutMs / 10)));
}

/** Node's and Fastify's server options for the configured timeouts. */
export function serverTimeouts(limits: ConnectionLimits): {
  requestTimeout: number;
  keepAliveTimeout: number;
  http: ServerOptions;
} {
  const interval = checkInterval(limits);
  return {
    // Node checks both only every `interval` ms: subtracting it closes a
    // connection within the configured time, not up to a check later.
    // headersTimeout counts from the moment a connection opens (or from the
    // first byte of a later request on it), so it also closes connections
    // that never send anything. requestTimeout covers the head and the body.
    requestTimeout: limits.requestTimeoutMs - interval,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    http: {
      headersTimeout: limits.headersTimeoutMs - interval,
      connectionsCheckingInterval: interval,
      // Node would answer a missing Host itself, with a bare 400; the app's
      // onRequest hook answers it in the Error shape instead.
      requireHostHeader: false,
    },
  };
}

const LIMIT_LOG_EVERY_MS = 10_000;

/** What guardConnections gives back: for shutting down. */
export interface GuardedConnections {
  /**
   * Closes the connections that have not sent a byte. Node's
   * closeIdleConnections leaves them open until the headers timeout, so
   * connections a browser or an HTTP client opened ahead of need would hold
   * a shutdown for that long; with nothing received, no request is lost.
   */
  closeUnused(): void;
  /**
   * Closes the keep-alive connections waiting for a next request, as Node's
   * closeIdleConnections does, but only at a moment when no answer has ended
   * and is still being sent: Node destroys those connections too (it checks
   * that the answer ended, not that it was sent), and a client that reads
   * slowly gets its answer cut short. The next sweep tries again. It is also
   * the server's closeIdleConnections from then on, which server.close() calls.
   */
  closeIdle(): void;
  /**
   * Has each response not yet begun say `Connection: close`, and its
   * connection close once it is sent, so that no client sends another request
   * on a connection about to close. A connection that has already read a
   * later request (pipelined) is left to be closed once idle: its answer
   * waits behind this one, and closing after this one would lose it.
   */
  closeAfterAnswers(): void;
}

/** What Node keeps on a server socket (fields it has had since 0.x). */
export type ServerSocket = Socket & {
  /** The response the connection is working on. */
  _httpMessage?: ServerResponse | null;
  /** The parser, whose `incoming` is the last request it read. */
  parser?: { incoming?: unknown } | null;
};

/**
 * The connection cap, and a deadline for the whole request: Node's timeouts
 * end once the body has arrived, so a stalled handler or a client that reads
 * the answer a byte at a time could otherwise hold a connection for ever.
 * A sweep every check interval looks at each connection's current response
 * (nothing is done per request); one first seen more than the request
 * timeout ago is answered 503 if nothing was sent yet, and its connection
 * is closed.
 */
export function guardConnections(server: Server, limits: ConnectionLimits, log: FastifyBaseLogger): GuardedConnections {
  if (limits.maxConnections > 0) {
    server.maxConnections = limits.maxConnections;
    let refused = 0;
    let loggedAt = -Infinity;
    server.on('drop', () => {
      refused++;
      const now = performance.now();
      if (now - loggedAt < LIMIT_LOG_EVERY_MS) return;
      log.warn(
        { maxConnections: limits.maxConnections, refused },
        `connection limit reached: ${limits.maxConnections} connections are open, so new connections are closed at once (--max-connections)`,
      );
      loggedAt = now;
      refused = 0;
    });
  }

  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  const interval = checkInterval(limits);
  const deadline = limits.requestTimeoutMs - interval;
  const firstSeen = new WeakMap<ServerResponse, number>();
  const sweep = () => {
    const now = performance.now();
    for (const socket of sockets) {
      const res = (socket as ServerSocket)._httpMessage;
      if (!res || isLongLived(res)) continue;
      const since = firstSeen.get(res);
      if (since === undefined) firstSeen.set(res, now);
      // A request still arriving is Node's to cut, with a 408 (serverTimeouts).
      else if (now - since >= deadline && res.req.complete) cut(res, socket, limits.requestTimeoutMs);
    }
  };
  let timer: NodeJS.Timeout | undefined;
  server.on('listening', () => {
    timer ??= setInterval(sweep, interval).unref();
  });
  server.on('close', () => {
    clearInterval(timer);
    timer = undefined;
  });
  const closeIdleNow = server.closeIdleConnections.bind(server);
  const closeIdle = () => {
    for (const socket of sockets as Set<ServerSocket>) {
      const res = socket._httpMessage;
      if (res && res.writableEnded && !res.writableFinished) return;
    }
    closeIdleNow();
  };
  // server.close() calls this method first (Node 19 and later): guarded, it
  // cannot cut short an answer at shutdown either.
  server.closeIdleConnections = closeIdle;
  return {
    closeIdle,
    closeUnused() {
      for (const socket of sockets) if (socket.bytesRead === 0) socket.destroy();
    },
    closeAfterAnswers() {
      for (const socket of sockets as Set<ServerSocket>) {
        const res = socket._httpMessage;
        if (res && !res.headersSent && (socket.parser?.incoming ?? res.req) === res.req) res.shouldKeepAlive = false;
      }
    },
  };
}

function cut(res: ServerResponse, socket: Socket, timeoutMs: number): void {
  if (res.headersSent || res.writableEnded) {
    socket.destroy();
    return;
  }
  const error = errors.unavailable(`the request did not complete within ${timeoutMs} ms`);
  const { body, headers } = errorResponse(error);
  res.writeHead(error.statusCode, { ...SECURITY_HEADERS, ...headers, connection: 'close' });
  // A client that does not read even this is cut at the next sweep.
  res.end(body);
}
