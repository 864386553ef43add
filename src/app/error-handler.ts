import type { FastifyError, FastifyInstance } from 'fastify';
import { InvalidCursorError } from '../store/store.js';
import { AppError, StoreUnavailableError, errors } from './errors.js';
import { RequestValidationError } from './validation.js';

/** Maps anything thrown while handling a request onto the error catalog. */
function toAppError(error: FastifyError | Error, bodyLimit: number, contentType: string | undefined): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof RequestValidationError || error instanceof InvalidCursorError) return errors.badRequest(error.message);
  if (error instanceof StoreUnavailableError) return errors.unavailable();
  const fastifyError = error as FastifyError;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(bodyLimit);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(contentType);
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return errors.badRequest('Content-Length does not match the length of the body');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.badRequest('request body is empty: send a JSON object');
  }
  if (fastifyError.statusCode === 400) return errors.badRequest(fastifyError.message);
  if (fastifyError.statusCode === 413) return errors.payloadTooLarge(bodyLimit);
  if (fastifyError.statusCode === 415) return errors.unsupportedMediaType(contentType);
  return errors.internal();
}

export function registerErrorHandling(app: FastifyInstance, bodyLimit: number): void {
  app.setErrorHandler<FastifyError>((error, request, reply) => {
    const appError = toAppError(error, bodyLimit, request.headers['content-type']);
    // 5xx details go to the log only; the client gets the catalog's message.
    if (appError.statusCode >= 500) request.log.error({ err: error }, 'request failed');
    void reply
      .code(appError.statusCode)
      .headers(appError.headers)
      .type('application/json; charset=utf-8')
      .send({ error: appError.statusCode, message: appError.message });
  });

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0]!.slice(0, 200);
    void reply
      .code(404)
      .type('application/json; charset=utf-8')
      .send({ error: 404, message: `no route for ${request.method} ${path}` });
  });
}
