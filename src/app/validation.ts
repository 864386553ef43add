import type { TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import type { FastifySchemaCompiler } from 'fastify';
import { isInt64Schema, parseInt64Text } from '../schemas/int64.js';
import { NOT_AN_OBJECT, batchTooLarge, emptyBatch, oneOrBatchParts } from '../schemas/plant-batch.js';

// Validation with TypeBox's compiler instead of Ajv: it knows bigint, which
// exact int64 ids need. Messages come from each schema's x-error-message, so
// a field's message is declared next to the field.

type Part = 'body' | 'querystring' | 'params' | 'headers';

/**
 * Turns decimal text into the numbers the schema asks for, with the keys
 * found once, when compiling. Query strings and path parameters arrive as
 * text, so there integer properties become numbers and int64 ones bigint.
 * In a body, int64 properties may be JSON strings of decimal digits (clients
 * whose numbers are doubles send them so): they become bigint, to be checked
 * exactly like an integer literal. Text is taken only as JSON writes an
 * integer: no sign but '-', no leading zeros (so /plants/0900 and ?limit=01
 * are 400, as "id": 0900 is), and short enough to be an int64.
 */
function textConverter(schema: TSchema, part: Part): ((input: unknown) => unknown) | undefined {
  if (part === 'headers') return undefined;
  const props = Object.entries((schema.properties ?? {}) as Record<string, TSchema>);
  // [key, whether it becomes a number rather than a bigint]
  const keys: [string, boolean][] = [];
  for (const [key, prop] of props) {
    if (isInt64Schema(prop)) keys.push([key, false]);
    else if (prop.type === 'integer' && part !== 'body') keys.push([key, true]);
  }
  if (keys.length === 0) return undefined;
  return (input) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
    const source = input as Record<string, unknown>;
    let out: Record<string, unknown> | undefined;
    for (const [key, asNumber] of keys) {
      const v = source[key];
      if (typeof v !== 'string' || !Object.hasOwn(source, key)) continue;
      const n = parseInt64Text(v);
      if (n !== undefined) (out ??= { ...source })[key] = asNumber ? Number(n) : n;
    }
    return out ?? input;
  };
}

function describe(error: ValueError, part: Part, root: TSchema): string {
  const key = error.path.split('/').filter(Boolean).join('.');
  const where = part === 'querystring' ? 'query parameter' : part === 'params' ? 'path parameter' : 'property';
  if (error.type === ValueErrorType.ObjectRequiredProperty) {
    return part === 'body' ? `${key} is required` : `${where} ${key} is required`;
  }
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    return `unknown ${where} "${key.length > 64 ? `${key.slice(0, 64)}…` : key}"`;
  }
  if (error.path === '' && part === 'body' && error.value === undefined) {
    return 'request body is required: send a JSON object';
  }
  const message = (error.schema as { 'x-error-message'?: string })['x-error-message'];
  if (message) return message;
  if (error.path === '' && part === 'body')
    return (root as { 'x-error-message'?: string })['x-error-message'] ?? 'request body is invalid';
  return key ? `${key}: ${error.message}` : error.message;
}

/** A query parameter given more than once (parsed as an array), quoted and cut short: which one the caller meant is unknown. */
function repeatedKey(query: unknown): string | undefined {
  if (typeof query !== 'object' || query === null) return undefined;
  for (const [key, value] of Object.entries(query)) if (Array.isArray(value)) return JSON.stringify(key.slice(0, 64));
  return undefined;
}

export class RequestValidationError extends Error {
  override name = 'RequestValidationError';
}

/** At most this many messages in one 400: enough to fix a body by, short enough to read. */
const MAX_MESSAGES = 3;

/**
 * A body that is one object or an array of them (NewPlantOrBatch): an object
 * is checked as the element schema alone would check it; an array element by
 * element, each message led by the element's place and field (/2/name).
 */
function oneOrBatch(one: TSchema, maxItems: number): (input: unknown) => Validated {
  const single = compile(one, 'body');
  const check = TypeCompiler.Compile(one);
  const convert = textConverter(one, 'body');
  return (input) => {
    if (!Array.isArray(input)) return single(input);
    if (input.length === 0) return { error: new RequestValidationError(emptyBatch(maxItems)) };
    if (input.length > maxItems) return { error: new RequestValidationError(batchTooLarge(maxItems, input.length)) };
    const value: unknown[] = new Array(input.length);
    const messages: string[] = [];
    for (let i = 0; i < input.length && messages.length < MAX_MESSAGES; i++) {
      const element = convert ? convert(input[i]) : input[i];
      value[i] = element;
      if (check.Check(element)) continue;
      const reported = new Set<string>();
      for (const error of check.Errors(element)) {
        if (reported.has(error.path)) continue;
        reported.add(error.path);
        const what = error.path === '' ? NOT_AN_OBJECT : describe(error, 'body', one);
        messages.push(`/${i}${error.path}: ${what}`);
        if (messages.length === MAX_MESSAGES) break;
      }
    }
    return messages.length > 0 ? { error: new RequestValidationError(messages.join('; ')) } : { value };
  };
}

export const validatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const part = (httpPart ?? 'body') as Part;
  const batch = part === 'body' ? oneOrBatchParts(schema) : undefined;
  return batch ? oneOrBatch(batch.one, batch.maxItems) : compile(schema, part);
};

/**
 * What a validator answers: the value the request part becomes, or `true`
 * when the part stays as it is. Headers are checked but never replaced:
 * Fastify would keep a replacement beside the raw headers and copy both into
 * a new object on every later read of request.headers.
 */
type Validated = { value: unknown } | { error: Error } | true;

function compile(schema: TSchema, part: Part): (input: unknown) => Validated {
  const check = TypeCompiler.Compile(schema);
  const convert = textConverter(schema, part);
  return (input: unknown) => {
    const value = convert ? convert(input) : input;
    if (check.Check(value)) return part === 'headers' ? true : { value };
    // No query schema takes a list, so a parameter given twice fails the check: say why.
    const repeated = part === 'querystring' ? repeatedKey(input) : undefined;
    if (repeated !== undefined)
      return { error: new RequestValidationError(`query parameter ${repeated} is given more than once`) };
    const messages = new Set<string>();
    const reported = new Set<string>();
    for (const error of check.Errors(value)) {
      // A missing property also fails its type check: say it once.
      if (reported.has(error.path)) continue;
      reported.add(error.path);
      messages.add(describe(error, part, schema));
      if (messages.size === MAX_MESSAGES) break;
    }
    return { error: new RequestValidationError([...messages].join('; ')) };
  };
}
