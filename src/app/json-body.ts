import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse } from 'lossless-json';
import { errors } from '../http/errors.js';
import { parseJsonNumber } from '../schemas/int64.js';
import { NAME_MAX_LENGTH, TAG_MAX_LENGTH } from '../schemas/plant.js';

/**
 * The most keys, array elements and nested objects or arrays a body may hold
 * (a NewPlant has 3 properties), and as many again per plant of the largest
 * batch. Parsing and validating a megabyte of `"k1":1,"k2":1,…` took half a
 * second of the event loop; counting stops at the first value past the limit.
 */
const MAX_JSON_VALUES = 100;
/** A batch element's share: `{`, its keys, the commas between them and after it, with room for a key too many (named in the 400). */
const JSON_VALUES_PER_PLANT = 10;

/**
 * The longest JSON string a valid body can hold, as written: the longest
 * field with every character an escaped surrogate pair (12 characters for
 * one code point). The parser takes time out of proportion to a long string
 * (a megabyte one held the event loop for over 100 ms), so a longer one is
 * refused before parsing.
 */
const MAX_JSON_STRING = Math.max(NAME_MAX_LENGTH, TAG_MAX_LENGTH) * 12;

const TOO_LONG_STRING = `a string in the request body is longer than any field allows (name and tag: at most ${Math.max(NAME_MAX_LENGTH, TAG_MAX_LENGTH)} characters)`;

const STRUCTURE = /["[{,:]/g;
const NESTING = /["[{,:\]}]/g;
/** How deep a batch may nest: an array of objects, and room for one level too many, named in the 400. */
const BATCH_DEPTH = 3;
// No number, true, false or null a body may hold comes near this length; the
// parser would read a megabyte of digits one at a time.
const LONG_LITERAL = /[^\s\]}]{65}/;

/** Why a literal over 64 characters outside quotes, starting at `from`, is refused: a number, or no JSON at all. */
function longLiteralRefusal(text: string, from: number): string {
  return /^\s*-?[0-9]/.test(text.slice(from, from + 80))
    ? 'a number in the request body is too long'
    : 'request body is not valid JSON: it holds a word outside quotes longer than any number, true, false or null';
}

/** What a body holds outside its strings, read before parsing. */
interface Shape {
  /** Colons outside strings: the keys of a valid body. */
  keys: number;
  /** Whether every number in it is written as an integer: no fraction, no exponent. */
  integers: boolean;
}

/** Whether the number literal (or true, false, null) in text[from, to) has a fraction or an exponent. */
function notInteger(text: string, from: number, to: number): boolean {
  let i = from;
  while (i < to && text.charCodeAt(i) <= 32) i++;
  const first = text.charCodeAt(i);
  // 45 is '-', 48-57 the digits; true and false hold an 'e' but are no numbers.
  if (i === to || (first !== 45 && (first < 48 || first > 57))) return false;
  for (; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c === 46 || c === 101 || c === 69) return true; // . e E
  }
  return false;
}

/**
 * Why `text` is refused before parsing: more than `max` commas, colons, `[`
 * and `{` outside strings, a literal (a number) of more than 64 characters,
 * or a string longer than MAX_JSON_STRING (terminated or not). Otherwise
 * its Shape.
 */
function tooCostly(text: string, max: number, what: string, maxDepth?: number): { refusal: string } | Shape {
  let count = 0;
  let keys = 0;
  let integers = true;
  let from = 0;
  let depth = 0;
  const literalTooLong = (to: number) => to - from > 64 && LONG_LITERAL.test(text.slice(from, to));
  // With a depth limit, the closing brackets are read too, to know the depth.
  const structure = maxDepth === undefined ? STRUCTURE : NESTING;
  structure.lastIndex = 0;
  for (let m = structure.exec(text); m !== null; m = structure.exec(text)) {
    if (literalTooLong(m.index)) return { refusal: longLiteralRefusal(text, from) };
    if (m[0] === ']' || m[0] === '}') {
      depth--;
      if (integers && m.index > from) integers = !notInteger(text, from, m.index);
      from = m.index + 1;
      continue;
    }
    if ((m[0] === '[' || m[0] === '{') && ++depth > maxDepth!)
      return {
        refusal: `request body nests arrays and objects more than ${maxDepth} deep: a batch is an array of objects`,
      };
    if (m[0] !== '"') {
      if (++count > max)
        return {
          refusal: `request body has more than ${max} JSON values (keys, array elements, objects): ${what}`,
        };
      if (m[0] === ':') keys++;
      else if (integers && m.index > from) integers = !notInteger(text, from, m.index);
      from = m.index + 1;
      continue;
    }
    // Jump to the closing quote: the first one after an even number of backslashes.
    let end = m.index;
    for (;;) {
      end = text.indexOf('"', end + 1);
      if (end < 0) end = text.length; // unterminated: the parser says so, if it is short
      if (end - m.index - 1 > MAX_JSON_STRING) return { refusal: TOO_LONG_STRING };
      if (end === text.length) return { keys, integers };
      let slashes = 0;
      while (text.charCodeAt(end - 1 - slashes) === 92) slashes++;
      if (slashes % 2 === 0) break;
    }
    structure.lastIndex = from = end + 1;
  }
  if (literalTooLong(text.length)) return { refusal: longLiteralRefusal(text, from) };
  return { keys, integers: integers && !notInteger(text, from, text.length) };
}

/**
 * Keys of every object in a parsed body (at most MAX_JSON_VALUES of them, so
 * cheap to walk). With `exact`, for a JSON.parse result whose numbers are all
 * integer literals, it also turns each number into the bigint it was written
 * as, in place, and gives undefined when one was past 2^53, where JSON.parse
 * may have rounded it.
 */
function countKeys(value: unknown, exact = false): number | undefined {
  if (value === null || typeof value !== 'object') return 0;
  const items = value as Record<string, unknown>;
  const keys = Object.keys(items);
  let n = Array.isArray(items) ? 0 : keys.length;
  for (const key of keys) {
    const item = items[key];
    if (exact && typeof item === 'number') {
      if (!Number.isSafeInteger(item)) return undefined;
      items[key] = BigInt(item);
      continue;
    }
    const inner = countKeys(item, exact);
    if (inner === undefined) return undefined;
    n += inner;
  }
  return n;
}

/**
 * The body as the exact parser would read it, through the engine's faster
 * JSON.parse, or undefined when that cannot be told: a number with a
 * fraction or exponent (which stays a number), one past 2^53, a repeated key
 * (JSON.parse keeps the last), or invalid JSON. The exact parser reads those
 * and words their errors.
 */
function parseFast(text: string, shape: Shape): unknown {
  if (!shape.integers) return undefined;
  // Held in an array, so that a body that is a bare number is turned too.
  const held: unknown[] = [];
  try {
    held[0] = JSON.parse(text);
  } catch {
    return undefined;
  }
  return countKeys(held, true) === shape.keys ? held[0] : undefined;
}

const DUPLICATE_KEY = /^Duplicate key '(.*)' encountered/;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
const CHARSET = /;\s*charset\s*=\s*"?([^";\s]+)"?/i;

/**
 * Makes application/json in UTF-8 the only accepted body type (anything else
 * is 415), decoded strictly (invalid UTF-8 is 400, never silently replaced)
 * and parsed losslessly: Fastify's own parser goes through JSON.parse, which
 * rounds large integers. An empty body parses to nothing, so a DELETE sent
 * with a JSON Content-Type but no body is fine and POST reports it as missing.
 */
export function registerJsonBodyParser(app: FastifyInstance, bodyLimit: number, maxBatch = 1): void {
  // An array (a batch) may hold more than an object: as much as its plants need.
  const batchValues = Math.max(MAX_JSON_VALUES, 1 + JSON_VALUES_PER_PLANT * maxBatch);
  const batchLimit = `a batch holds at most ${maxBatch} plants of 3 properties each`;
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
      const scan = text.trimStart().startsWith('[')
        ? tooCostly(text, batchValues, batchLimit, BATCH_DEPTH)
        : tooCostly(text, MAX_JSON_VALUES, 'a NewPlant has 3 properties');
      if ('refusal' in scan) return done(errors.badRequest(scan.refusal));
      const fast = parseFast(text, scan);
      if (fast !== undefined) return done(null, fast);
      let parsed: unknown;
      try {
        parsed = parse(text, null, { parseNumber: parseJsonNumber });
      } catch (error) {
        const message = (error as Error).message;
        const duplicate = DUPLICATE_KEY.exec(message)?.[1];
        if (duplicate !== undefined)
          return done(
            errors.badRequest(`request body has the key ${JSON.stringify(duplicate.slice(0, 100))} more than once`),
          );
        return done(errors.badRequest(`request body is not valid JSON: ${message.slice(0, 200)}`));
      }
      // The parser refuses a repeated key only when its values differ; a
      // repeat with the same value is just as ambiguous to other readers.
      if (countKeys(parsed) !== scan.keys) return done(errors.badRequest('request body has a key more than once'));
      done(null, parsed);
    },
  );
}
