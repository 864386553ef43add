// A body's parsing cost stays in proportion to what a valid body can hold:
// a string longer than any field allows is refused before the JSON parser
// sees it (a megabyte one used to hold the event loop for over 100 ms; see
// scripts/stall-probe.ts for the event-loop delay under four such senders).
import assert from 'node:assert/strict';
import { useApp } from '../helpers/app.js';
import { createRaw, expectError, jsonBody, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';
import { it } from '../helpers/requirements.js';
// Name and tag: 256 code points, each at most 12 characters as written (an escaped surrogate pair).
const MAX_JSON_STRING = 256 * 12;

const MIB = 1024 * 1024;
const TOO_LONG =
  /a string in the request body is longer than any field allows \(name and tag: at most 256 characters\)/;

describeHttpLayer('bodies with strings longer than any field', (fx) => {
  const h = useApp(fx);

  const COSTLY: Array<[string, () => string]> = [
    ['a 1 MiB name', () => JSON.stringify({ id: 1, name: 'x'.repeat(MIB - 30) })],
    ['a 1 MiB tag after a valid name', () => JSON.stringify({ id: 1, name: 'ok', tag: 'y'.repeat(MIB - 40) })],
    ['a 1 MiB key', () => `{"${'k'.repeat(MIB - 30)}":1,"id":1,"name":"x"}`],
    ['a 1 MiB string inside an array', () => JSON.stringify({ id: [1, 'z'.repeat(MIB - 40)], name: 'x' })],
    ['a 1 MiB string of escaped quotes', () => `{"id":1,"name":"${'\\"'.repeat(MIB / 2 - 30)}"}`],
    ['an unterminated 1 MiB string', () => `{"id":1,"name":"${'x'.repeat(MIB - 30)}`],
  ];
  for (const [what, body] of COSTLY) {
    it(`refuses ${what} before parsing it, storing nothing`, { timeout: 10_000 }, async () => {
      const token = await h.token(newOwner('long'));
      expectError(await createRaw(h, token, body()), 400, TOO_LONG);
      const list = await h.request({ method: 'GET', url: '/plants', token });
      assert.deepEqual(jsonBody(list), []);
    });
  }

  it(
    'still accepts the longest valid plant, every character written as an escaped surrogate pair',
    { timeout: 10_000 },
    async () => {
      const token = await h.token(newOwner('long'));
      const escaped = '\\ud83c\\udf35'.repeat(256); // 256 cacti
      assert.equal(escaped.length, MAX_JSON_STRING);
      const res = await createRaw(h, token, `{"id":1,"name":"${escaped}","tag":"${escaped}"}`);
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(jsonBody(res), { name: '🌵'.repeat(256), tag: '🌵'.repeat(256) });
    },
  );

  it('says a name one character too long is too long, naming the field', { timeout: 10_000 }, async () => {
    const token = await h.token(newOwner('long'));
    expectError(await createRaw(h, token, JSON.stringify({ id: 1, name: 'x'.repeat(257) })), 400, /^name must be/);
  });
});
