import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifyServerOptions } from 'fastify';
import { InvalidCursorError, StoreUnavailableError, TooManyPlantsError } from '../store/store.js';
import { AppError, errorResponse, errors, isServerFailure } from '../http/errors.js';
import { SECURITY_HEADERS } from '../http/headers.js';
import type { ServerSocket } from './connection-limits.js';
import { FailureLog, requestLine } from './logger.js';
import { RequestValidationError } from './validation.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The cause of a 5xx, logged once with the request line. */
    failure?: unknown;
  }
}

/** Maps anything thrown while handling a request onto the error catalog. */
function toAppError(error: FastifyError | Error, bodyLimit: number, contentType: string | undefined): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof RequestValidationError || error instanceof InvalidCursorError)
    return errors.badRequest(error.message);
  if (error instanceof StoreUnavailableError) return errors.unavailable(undefined, error.retryAfterSeconds);
  if (error instanceof TooManyPlantsError) return errors.quotaExceeded(error.message);
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(contentType);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('Content-Length does not match the length of the body');
  }
  // The /docs page's static files: a path they will not serve (NUL, too long)
  // is as absent as a missing file, and conditional or range requests may fail.
  if (fastifyError.statusCode === 403 || fastifyError.statusCode === 404) return errors.notFound('no such file');
  if (fastifyError.statusCode === 412) return errors.preconditionFailed();
  if (fastifyError.statusCode === 416) return errors.rangeNotSatisfiable();
  if (fastifyError.statusCode === 400) return errors.badRequest(fastifyError.message);
  if (fastifyError.statusCode === 413) return errors.payloadTooLarge(bodyLimit);
  if (fastifyError.statusCode === 415) return errors.unsupportedMediaType(contentType);
  return errors.internal();
}

// A request refused before its body was read: close the connection rather
// than have Node read and discard a body nobody wants.
const hasUnreadBody = (request: FastifyRequest) =>
  request.body === undefined &&
  (request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0);

export function sendError(reply: FastifyReply, error: AppError): FastifyReply {
  if (error.statusCode !== 404 && error.statusCode !== 405 && hasUnreadBody(reply.request))
    void reply.header('connection', 'close');
  const { body, headers } = errorResponse(error);
  return reply.code(error.statusCode).headers(error.headers).type(headers['content-type']).send(body);
}

/**
 * @param requestLines whether every request gets an access line; if so a
 *   5xx cause is left for that line, otherwise it is logged here.
 */
export function registerErrorHandling(app: FastifyInstance, bodyLimit: number, requestLines: boolean): void {
  const failures = new FailureLog();
  app.setErrorHandler<FastifyError>((error, request, reply) => {
    const appError = toAppError(error, bodyLimit, request.headers['content-type']);
    // 5xx details go to the log only; the client gets the catalog's message.
    if (isServerFailure(appError.statusCode)) {
      if (requestLines) request.failure = error;
      else {
        // A kind of failure that repeats (a full disk) is logged with its stack once, then summarised.
        const sampled = failures.sample(error);
        if (sampled) {
          const message =
            sampled.similarBefore === undefined
              ? 'request failed'
              : `request failed; ${sampled.similarBefore} more failed the same way since the last such line`;
          app.log.error({ ...requestLine(request, appError.statusCode), ...sampled }, message);
        }
      }
    }
    return sendError(reply, appError);
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!.slice(0, 200);
    return sendError(reply, errors.notFound(`no route for ${request.method} ${path}`));
  });
}

/** Errors Fastify raises before routing (bad percent-encoding, over-long path parameters). */
export const frameworkErrors: NonNullable<FastifyServerOptions['frameworkErrors']> = (error, _request, reply) => {
  const appError =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? errors.uriTooLong() : errors.badRequest('the request URL is not valid');
  void reply.headers(SECURITY_HEADERS);
  void sendError(reply, appError);
};

/**
 * Requests Node's HTTP parser rejects never reach Fastify: answer them in the
 * same Error shape. Node also reports here a connection whose request head or
 * body did not arrive in time (--headers-timeout-ms, --request-timeout-ms):
 * 408, or, for a connection that never sent a byte, just closing it. Returns
 * the status answered with, or undefined when it left the answer to the app
 * or only closed the socket.
 *
 * One request gets one answer: on a connection whose response has begun, a
 * second one would be read as the answer to the next request, so the
 * connection is only closed, once what was written has gone out.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): number | undefined {
  const timedOut = error.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const answering = (socket as ServerSocket)._httpMessage;
  if (answering?.headersSent) {
    if (answering.writableEnded) socket.destroySoon();
    else socket.destroy();
    return undefined;
  }
  // Node refuses a Transfer-Encoding not ending in chunked only after it has
  // handed the request's head to the app, which refuses it too before reading
  // any body (401 without a token, else 400: request-framing.ts), perhaps
  // after this: that answer is the one, and the connection closes after it.
  if (error.code === 'HPE_INVALID_TRANSFER_ENCODING' && answering) {
    answering.shouldKeepAlive = false;
    return undefined;
  }
  if (!socket.writable || (timedOut && socket.bytesRead === 0)) {
    socket.destroy();
    return undefined;
  }
  const method = error.code === 'HPE_INVALID_METHOD' ? unknownMethod(error) : undefined;
  const version = error.code === 'HPE_INVALID_VERSION' ? unknownVersion(error) : undefined;
  const appError = timedOut
    ? errors.requestTimeout()
    : error.code === 'HPE_HEADER_OVERFLOW'
      ? errors.headersTooLarge()
      : method !== undefined
        ? errors.notImplemented(`the method ${method} is not implemented by this server`)
        : version !== undefined
          ? errors.httpVersionNotSupported(version)
          : errors.badRequest('malformed HTTP request');
  answerOnSocket(socket, appError);
  return appError.statusCode;
}

// A request line whose method is a well-formed token (RFC 9110 9.1), at most
// 32 characters, that Node does not know: FROB, or get in lower case.
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}) \S+ HTTP\/1\.[01]\r?\n/;
// A request line of a well-formed HTTP version (RFC 9112 2.3) Node does not parse: HTTP/1.2, HTTP/3.0.
const VERSIONED_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32} \S+ HTTP\/(\d\.\d)\r?\n/;

const requestHead = (error: Error & { rawPacket?: unknown }): string | undefined =>
  Buffer.isBuffer(error.rawPacket) ? error.rawPacket.subarray(0, 2048).toString('latin1') : undefined;

/**
 * The method of a request Node refused for its method, when the request line
 * is otherwise well formed: RFC 9110 asks for 501 there. Anything else (TLS
 * sent to this port, binary noise) stays a malformed request.
 */
function unknownMethod(error: Error & { rawPacket?: unknown }): string | undefined {
  const head = requestHead(error);
  return head === undefined ? undefined : REQUEST_LINE.exec(head)?.[1];
}

/** The version of a request Node refused for its version, when it is a well-formed one: 505 there. */
function unknownVersion(error: Error & { rawPacket?: unknown }): string | undefined {
  const head = requestHead(error);
  return head === undefined ? undefined : VERSIONED_LINE.exec(head)?.[1];
}

/**
 * Writes `appError` as a whole response straight to a socket Fastify never
 * saw (a request Node refused, CONNECT), in the Error shape with the security
 * headers, and closes the connection.
 */
export function answerOnSocket(socket: Socket, appError: AppError): void {
  const { body, headers } = errorResponse(appError);
  const head = Object.entries({ ...SECURITY_HEADERS, ...headers, connection: 'close' })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${appError.statusCode} ${STATUS_CODES[appError.statusCode]}\r\n${head}\r\n${body}`);
  // A client that sends but does not read must not keep the socket open.
  socket.destroySoon();
}
