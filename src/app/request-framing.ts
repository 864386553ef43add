import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { errors, type AppError } from '../http/errors.js';
import { headerCount } from '../http/headers.js';
import { answerOnSocket } from './error-handler.js';

/**
 * How a request's body is framed and announced, checked once the token check
 * has passed and before the body is read (a preParsing hook): so a stranger
 * gets 401 whatever the framing, and a refused body is never read.
 *
 * - `Expect: 100-continue`: Node would invite the body before any hook runs.
 *   It is invited only here, and only within the size limit; otherwise the
 *   request goes on to be refused (401, 413) without its body being read.
 * - Any other expectation: 417, where Node would answer it itself with no body.
 * - A Transfer-Encoding not ending in chunked (`gzip`): 400, since the body's
 *   length cannot be known (RFC 9112 6.3). Node's parser refuses it too, once
 *   it has handed the head on; see clientErrorHandler.
 * - Other transfer codings before chunked (`gzip, chunked`): 501, where Node
 *   would pass the body on still encoded (RFC 9112 6.1).
 * - More than one Content-Type: 400; Node keeps the first, a proxy may use another.
 * - A body on DELETE: 400; it has no meaning there (RFC 9110 9.3.5).
 */
export function checkRequestFraming(app: FastifyInstance, bodyLimit: number): void {
  const waiting = new WeakSet<IncomingMessage>();
  const unmet = new WeakSet<IncomingMessage>();
  app.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    const length = Number(req.headers['content-length'] ?? 0);
    if (!(length > bodyLimit)) waiting.add(req);
    app.server.emit('request', req, res);
  });
  app.server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    unmet.add(req);
    app.server.emit('request', req, res);
  });
  app.addHook('preParsing', (request, reply, payload, done) => {
    const req = request.raw;
    if (unmet.has(req)) {
      const expect = String(req.headers.expect).slice(0, 100);
      return done(errors.expectationFailed(`Expect: ${expect} cannot be met: only 100-continue is understood`));
    }
    const coding = req.headers['transfer-encoding'];
    // The rest is about a body: most requests (every GET) have none.
    if (coding === undefined && req.headers['content-length'] === undefined) return done(null, payload);
    if (coding !== undefined && coding.trim().toLowerCase() !== 'chunked') {
      const shown = coding.slice(0, 100);
      return done(
        coding.split(',').at(-1)!.trim().toLowerCase() === 'chunked'
          ? errors.notImplemented(`Transfer-Encoding "${shown}" is not supported: send chunked or a Content-Length`)
          : errors.badRequest(
              `Transfer-Encoding "${shown}" does not end in chunked, so the body's length cannot be known: send chunked or a Content-Length`,
            ),
      );
    }
    if (headerCount(req.rawHeaders, 'content-type') > 1)
      return done(errors.badRequest('more than one Content-Type header'));
    if (request.method === 'DELETE' && (coding !== undefined || Number(req.headers['content-length'] ?? 0) > 0)) {
      return done(errors.badRequest('DELETE takes no request body'));
    }
    if (waiting.delete(req)) reply.raw.writeContinue();
    done(null, payload);
  });
}

const SLASH = 47;

/**
 * Why the request line's own form is refused, or undefined (checked first in
 * every request's onRequest hook, with Host: a proxy in front and this server
 * must not read one request two ways).
 *
 * - An HTTP version other than 1.0 and 1.1 (`HTTP/2.0` and `HTTP/0.9` get
 *   this far; Node's parser refuses the others, see clientErrorHandler): 505.
 * - The target `*` (asterisk-form) with any method but OPTIONS: 400 (RFC 9112 3.2.4).
 * - An absolute-form target (`http://host/plants`) whose authority is not the
 *   Host the request names: 400. A proxy routes by Host, the server by the
 *   target (RFC 9112 3.2.2), so a mismatch would be served for a host nobody
 *   asked. This server serves whatever Host a request names (it keeps no list
 *   of host names), so an absolute target must name the same one.
 * - Any other target that is not a path: 400.
 */
export function requestLineProblem(req: IncomingMessage): AppError | undefined {
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) return errors.httpVersionNotSupported(req.httpVersion);
  const target = req.url ?? '';
  if (target.charCodeAt(0) === SLASH) return undefined;
  if (target === '*') {
    return req.method === 'OPTIONS'
      ? undefined
      : errors.badRequest(`the request target * is for OPTIONS only, not ${req.method ?? 'this method'}`);
  }
  const absolute = /^(https?):\/\//i.exec(target);
  if (absolute === null || !URL.canParse(target))
    return errors.badRequest('the request target must be a path such as /plants (or an absolute http:// URL)');
  const authority = new URL(target).host;
  const host = req.headers.host;
  const named =
    host !== undefined && URL.canParse(`${absolute[1]}://${host}`)
      ? new URL(`${absolute[1]}://${host}`).host
      : undefined;
  if (named === authority) return undefined;
  return errors.badRequest(
    `the request target names the host ${JSON.stringify(authority.slice(0, 100))} but ` +
      (host === undefined ? 'no Host header is sent' : `the Host header is ${JSON.stringify(host.slice(0, 100))}`) +
      ': send the path alone (such as /plants), with the host in Host',
  );
}

/**
 * The server's `connect` listener. CONNECT asks for a tunnel, which this
 * server never opens: without a listener Node would close the connection
 * without a word. Returns the status answered with.
 */
export function refuseConnect(_req: IncomingMessage, socket: Socket): number {
  const error = errors.methodNotAllowedAnywhere('CONNECT is not allowed: this server is not a proxy');
  answerOnSocket(socket, error);
  return error.statusCode;
}
