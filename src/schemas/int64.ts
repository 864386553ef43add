import { Kind, Type, TypeRegistry, type TUnsafe } from '@sinclair/typebox';

export const INT64_MIN = -(2n ** 63n);
export const INT64_MAX = 2n ** 63n - 1n;

// JSON numbers past 2^53 lose precision as JavaScript numbers, so int64 values
// travel as bigint: the JSON body parser and the path/query coercion produce
// bigint for every integer literal, and this kind accepts only bigint in range.
TypeRegistry.Set('Int64', (_schema, value) => typeof value === 'bigint' && value >= INT64_MIN && value <= INT64_MAX);

export function Int64(options: { description?: string; 'x-error-message'?: string } = {}): TUnsafe<bigint> {
  return Type.Unsafe<bigint>({ [Kind]: 'Int64', type: 'integer', format: 'int64', ...options });
}

export function isInt64Schema(schema: unknown): boolean {
  return typeof schema === 'object' && schema !== null && (schema as Record<symbol, unknown>)[Kind] === 'Int64';
}
