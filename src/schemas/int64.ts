import { Kind, Type, TypeRegistry, type TUnsafe } from '@sinclair/typebox';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

/**
 * An int64 written as text: in a path, or as a JSON string for clients whose
 * numbers are doubles. Written as the JSON integer literal would be: optional
 * minus, decimal digits without leading zeros (007 is refused, as it is in
 * JSON, rather than quietly read as 7), at most 20 characters of digits. No
 * plus sign, spaces, fraction, exponent or hex.
 */
export const INT64_TEXT_PATTERN = '^-?(0|[1-9][0-9]{0,19})$';
const INT64_TEXT = new RegExp(INT64_TEXT_PATTERN);

/** The bigint an int64 text stands for (range not checked: the Int64 kind does that), or undefined if it is not one. */
export function parseInt64Text(text: string): bigint | undefined {
  return INT64_TEXT.test(text) ? BigInt(text) : undefined;
}

// "-9223372036854775808" is the longest int64 literal.
const INT64_MAX_CHARS = 20;

/**
 * The JSON number parser for request bodies and dumps (lossless-json's
 * parseNumber): an integer literal becomes a bigint, so ids past 2^53 keep
 * every digit; other numbers (1.5, 1e3, 1.0) stay numbers and so never pass
 * as an int64. A literal too long to be an int64 is not converted at all
 * (BigInt of a megabyte of digits takes a third of a second of the event
 * loop): it becomes an infinity, which no int64 check accepts.
 */
export function parseJsonNumber(text: string): bigint | number {
  if (text.length > INT64_MAX_CHARS) return text.startsWith('-') ? -Infinity : Infinity;
  return parseInt64Text(text) ?? Number(text);
}

// JSON numbers past 2^53 lose precision as JavaScript numbers, so int64 values
// travel as bigint: the JSON body parser turns integer literals into bigint,
// request validation turns int64 text (path, query, string ids) into bigint,
// and this kind accepts only bigint in range.
TypeRegistry.Set('Int64', (_schema, value) => typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX);

/**
 * An int64 that may be sent as a JSON integer or as a decimal string. The
 * document says both (oneOf), so generated clients let callers pass a string
 * and keep every digit.
 */
export function Int64(
  options: { description?: string; examples?: string[]; 'x-error-message'?: string } = {},
): TUnsafe<bigint> {
  return Type.Unsafe<bigint>({
    [Kind]: 'Int64',
    oneOf: [
      { type: 'integer', format: 'int64' },
      { type: 'string', pattern: INT64_TEXT_PATTERN, examples: ['9007199254740993'] },
    ],
    ...options,
  });
}

export function isInt64Schema(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && (schema as Record<symbol, unknown>)[Kind] === 'Int64';
}
