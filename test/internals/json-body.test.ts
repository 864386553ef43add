// The request body parser reads most bodies with JSON.parse and the rest with
// lossless-json, which keeps every digit of an integer. Whichever reads a
// body, the result must be what lossless-json alone gives: integer literals
// as bigints, other numbers as numbers, invalid JSON refused.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
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

/** A small deterministic generator (mulberry32), so a failure can be run again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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

/** A JSON-like text: mostly valid, sometimes with a bad number; keys unique per object. */
function body(next: () => number, depth = 0): string {
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const r = next();
  if (depth < 2 && r < 0.3) {
    const keys = ['id', 'name', 'tag', 'x'].filter(() => next() < 0.6);
    return `{${keys.map((k) => `"${k}"${pick([':', ' : '])}${body(next, depth + 1)}`).join(',')}}`;
  }
  if (depth < 2 && r < 0.4)
    return `[${Array.from({ length: Math.floor(next() * 3) }, () => body(next, depth + 1)).join(', ')}]`;
  if (r < 0.75) return pick(NUMBERS);
  if (r < 0.9) return pick(STRINGS);
  return pick(WORDS);
}

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
    const next = random(20261127);
    let accepted = 0;
    for (let i = 0; i < 3000; i++) {
      const text = body(next);
      const expected = exact(text);
      if (expected !== undefined) accepted++;
      assert.equal(await send(text), expected, text);
    }
    // Both kinds were generated: bodies to read and bodies to refuse.
    assert.ok(accepted > 1000 && accepted < 2900, `${accepted} of 3000 accepted`);
  });
});
