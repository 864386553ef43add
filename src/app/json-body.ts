import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse } from 'lossless-json';
import { errors } from './errors.js';

const INTEGER_LITERAL = /^-?(0|[1-9]\d*)$/;

// Integer literals become bigint so ids past 2^53 keep every digit; other
// numbers (1.5, 1e3, 1.0) stay numbers and so never pass as an int64 id.
function parseNumber(text: string): bigint | number {
  return INTEGER_LITERAL.test(text) ? BigInt(text) : Number(text);
}

/**
 * Makes application/json the only accepted body type (anything else is 415),
 * parsed losslessly: Fastify's own parser goes through JSON.parse, which rounds large integers.
 */
export function registerJsonBodyParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit },
    (_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const text = typeof body === 'string' ? body : body.toString('utf8');
      if (text.trim() === '') return done(errors.badRequest('request body is empty: send a JSON object'));
      try {
        done(null, parse(text, null, { parseNumber }));
      } catch (error) {
        done(errors.badRequest(`request body is not valid JSON: ${(error as Error).message}`));
      }
    },
  );
}
