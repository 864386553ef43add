import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse } from 'lossless-json';
import { errors } from '../http/errors.js';

const INTEGER_LITERAL = /^-?(0|[1-9]\d*)$/;

// Integer literals become bigint so ids past 2^53 keep every digit; other
// numbers (1.5, 1e3, 1.0) stay numbers and so never pass as an int64 id.
function parseNumber(text: string): bigint | number {
  return INTEGER_LITERAL.test(text) ? BigInt(text) : Number(text);
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

/**
 * Makes application/json in UTF-8 the only accepted body type (anything else
 * is 415), decoded strictly (invalid UTF-8 is 400, never silently replaced)
 * and parsed losslessly: Fastify's own parser goes through JSON.parse, which
 * rounds large integers. An empty body parses to nothing, so a DELETE sent
 * with a JSON Content-Type but no body is fine and POST reports it as missing.
 */
export function registerJsonBodyParser(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit },
    (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
      const contentType = request.headers['content-type']!;
      const charset = CHARSET.exec(contentType)?.[1]?.toLowerCase();
      if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
        return done(errors.unsupportedMediaType(contentType));
      }
      const encoding = request.headers['content-encoding'];
      if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
        return done(errors.unsupportedEncoding(encoding));
      }
      let text: string;
      try {
        text = typeof body === 'string' ? body : utf8.decode(body);
      } catch {
        return done(errors.badRequest('request body is not valid UTF-8'));
      }
      if (text.trim() === '') return done(null, undefined);
      try {
        done(null, parse(text, null, { parseNumber }));
      } catch (error) {
        done(errors.badRequest(`request body is not valid JSON: ${(error as Error).message.slice(0, 200)}`));
      }
    },
  );
}
