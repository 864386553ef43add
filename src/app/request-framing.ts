import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { errors } from '../http/errors.js';
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
