import { Kind, Type, TypeRegistry, type TUnsafe } from '@sinclair/typebox';

// JSON Schema counts string length in Unicode characters (code points), while
// JavaScript's .length counts UTF-16 units, so lengths are checked here. NUL
// and unpaired surrogates are refused: no store can keep them exactly (PostgreSQL
// text rejects NUL; SQLite turns a lone surrogate into U+FFFD), which would
// break safe retries.
const WELL_FORMED_NO_NUL = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$';
const wellFormedNoNul = new RegExp(WELL_FORMED_NO_NUL);

function codePoints(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff) n--;
  }
  return n;
}

interface TextSchema {
  minLength?: number;
  maxLength?: number;
}

TypeRegistry.Set<TextSchema>('Text', (schema, value) => {
  if (typeof value !== 'string' || !wellFormedNoNul.test(value)) return false;
  const n = codePoints(value);
  return n >= (schema.minLength ?? 0) && n <= (schema.maxLength ?? Infinity);
});

/** A string of whole Unicode characters, without NUL, its length counted in characters. */
export function Text(
  options: TextSchema & { description?: string; examples?: string[]; 'x-error-message'?: string },
): TUnsafe<string> {
  return Type.Unsafe<string>({ [Kind]: 'Text', type: 'string', pattern: WELL_FORMED_NO_NUL, ...options });
}
