// The request body parser reads most bodies with JSON.parse and the rest with
// lossless-json, which keeps every digit of an integer. Whichever reads a
// body, the result must be what lossless-json alone gives: integer literals
// as bigints, other numbers as numbers, invalid JSON refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import Fastify, { type FastifyInstance } from 'fastify';
import { parse as parseLossless } from 'lossless-json';
import { registerJsonBodyParser } from '../../src/app/json-body.js';
import { parseJsonNumber } from '../../src/schemas/int64.js';

/** bigints as "<digits>n", so that a bigint and a number never print the same. */
const show = (value: unknown) => JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v));

/** What lossless-json alone makes of a body: its value, or undefined when it refuses it. */
function exact(text: string): string | undefined {
  try {
    return show(parseLossless(text, null, { parseNumber: parseJsonNumber }));
  } catch {
    return undefined;
  }
}

const NUMBERS = [
  '0',
  '-0',
  '7',
  '-12',
  '9007199254740991',
  '9007199254740992',
  '9007199254740993',
  '-9007199254740991',
  '-9007199254740992',
  '9223372036854775807',
  '-9223372036854775808',
  '18446744073709551616',
  '1.0',
  '1.5',
  '-0.0',
  '1e3',
  '1E3',
  '2e-1',
  '1.5e2',
  '01',
  '-',
  '1.',
  '.5',
];
const STRINGS = ['"a"', '"e.5"', '"1.0"', '"x\\"y"', '"\\\\"', '"\\u00e9t\\u00e9"', '""', '"true"', '"1e3"'];
const WORDS = ['true', 'false', 'null'];

/** JSON-like texts: mostly valid, sometimes with a bad number; keys unique per object. */
const { body } = fc.letrec<{ body: string; object: string; array: string }>((tie) => ({
  body: fc.oneof(
    { depthSize: 'small', maxDepth: 2 },
    { arbitrary: fc.constantFrom(...NUMBERS), weight: 5 },
    { arbitrary: fc.constantFrom(...STRINGS), weight: 2 },
    { arbitrary: fc.constantFrom(...WORDS), weight: 1 },
    { arbitrary: tie('object'), weight: 3 },
    { arbitrary: tie('array'), weight: 1 },
  ),
  object: fc
    .dictionary(fc.constantFrom('id', 'name', 'tag', 'x'), fc.tuple(fc.constantFrom(':', ' : '), tie('body')), {
      maxKeys: 4,
    })
    .map(
      (o) =>
        `{${Object.entries(o)
          .map(([k, [colon, v]]) => `"${k}"${colon}${v}`)
          .join(',')}}`,
    ),
  array: fc.array(tie('body'), { maxLength: 3 }).map((items) => `[${items.join(', ')}]`),
}));

describe('JSON request bodies', () => {
  let app: FastifyInstance;
  before(async () => {
    app = Fastify();
    registerJsonBodyParser(app, 1024 * 1024);
    app.post('/', async (request) => show(request.body));
    await app.ready();
  });
  after(() => app.close());

  const send = async (text: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/',
      headers: { 'content-type': 'application/json' },
      payload: text,
    });
    return res.statusCode === 200 ? res.body : undefined;
  };

  it('reads each number as lossless-json does: integers exactly, as bigints; fractions and exponents as numbers', async () => {
    for (const n of NUMBERS) {
      for (const text of [n, `{"id":${n},"name":"e.5"}`, `[true, ${n}, "1.0"]`]) {
        assert.equal(await send(text), exact(text), text);
      }
    }
  });

  it('agrees with lossless-json on 3,000 generated bodies', async () => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(body, async (text) => {
        const expected = exact(text);
        if (expected !== undefined) accepted++;
        assert.equal(await send(text), expected, text);
      }),
      { seed: 20261127, numRuns: 3000 },
    );
    // Both kinds were generated: bodies to read and bodies to refuse.
    assert.ok(accepted > 1000 && accepted < 2900, `${accepted} of 3000 accepted`);
  });
});
