// Ids sent as JSON strings of decimal digits: the exact path for clients whose
// numbers are doubles. A string id is the same id as the integer literal with
// the same digits, checked against the same int64 range with the same message,
// and written the way a DELETE path writes it (no leading zeros).
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/requirements.js';
import { useApp } from '../helpers/app.js';
import { createRaw, deletePlant, expectError, jsonBody, listAll, newOwner } from '../helpers/plants-http.js';
import { describeHttpLayer } from '../helpers/stores.js';

const ID_MESSAGE = 'id must be an integer between -9223372036854775808 and 9223372036854775807';

describeHttpLayer('Ids as decimal strings', (fx) => {
  const h = useApp(fx);

  async function create(token: string, id: string, name: string): Promise<number> {
    const res = await createRaw(h, token, `{"id":${id},"name":${JSON.stringify(name)}}`);
    return res.statusCode;
  }

  it('keeps every digit: 2^53+1 and 2^53 are two plants, and deleting one leaves the other', async () => {
    const token = await h.token(newOwner('str'));
    const res = await createRaw(h, token, '{"id":"9007199254740993","name":"odd"}');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(jsonBody(res), { name: 'odd' });
    assert.equal(await create(token, '"9007199254740992"', 'even'), 200);
    assert.deepEqual((await listAll(h, token)).plants, [{ name: 'odd' }, { name: 'even' }]);
    assert.equal((await deletePlant(h, token, '9007199254740993')).statusCode, 204);
    assert.deepEqual((await listAll(h, token)).plants, [{ name: 'even' }]);
  });

  it('a string id and the integer with the same digits are one id (replay 200, conflict 409)', async () => {
    const token = await h.token(newOwner('str'));
    assert.equal(await create(token, '9223372036854775807', 'max'), 200);
    assert.equal(await create(token, '"9223372036854775807"', 'max'), 200);
    expectError(
      await createRaw(h, token, '{"id":"9223372036854775807","name":"other"}'),
      409,
      /\b9223372036854775807\b/,
    );
    assert.equal(await create(token, '"-9223372036854775808"', 'min'), 200);
    assert.equal(await create(token, '-9223372036854775808', 'min'), 200);
    assert.deepEqual((await listAll(h, token)).plants, [{ name: 'max' }, { name: 'min' }]);
    assert.equal((await deletePlant(h, token, '-9223372036854775808')).statusCode, 204);
    assert.equal((await deletePlant(h, token, '9223372036854775807')).statusCode, 204);
    assert.deepEqual((await listAll(h, token)).plants, []);
  });

  it('leading zeros are refused as the DELETE path refuses them ("007", like 007, is not an id); "-0" is 0', async () => {
    const token = await h.token(newOwner('str'));
    expectError(await createRaw(h, token, '{"id":"007","name":"seven"}'), 400, ID_MESSAGE);
    assert.equal(await create(token, '"-0"', 'zero'), 200);
    assert.equal(await create(token, '0', 'zero'), 200);
    expectError(await deletePlant(h, token, '000'), 400, ID_MESSAGE);
    assert.equal((await deletePlant(h, token, '-0')).statusCode, 204);
    assert.deepEqual((await listAll(h, token)).plants, []);
  });

  describe('400 with the id message, nothing stored', () => {
    const bad: Array<[string, string]> = [
      ['2^63', '"9223372036854775808"'],
      ['-2^63-1', '"-9223372036854775809"'],
      ['2^64+1 (would wrap to 1)', '"18446744073709551617"'],
      ['21 digits', '"000000000000000000001"'],
      ['the empty string', '""'],
      ['a fraction', '"1.0"'],
      ['an exponent', '"1e3"'],
      ['a plus sign', '"+1"'],
      ['a leading space', '" 1"'],
      ['a trailing space', '"1 "'],
      ['a trailing newline', '"1\\n"'],
      ['hex', '"0x10"'],
      ['a lone minus', '"-"'],
      ['non-ASCII digits', '"\u0661\u0662"'],
      ['a number in an array', '["1"]'],
    ];
    for (const [what, id] of bad) {
      it(what, async () => {
        const token = await h.token(newOwner('str'));
        assert.equal(await create(token, '1', 'one'), 200);
        expectError(await createRaw(h, token, `{"id":${id},"name":"x"}`), 400, ID_MESSAGE);
        assert.deepEqual((await listAll(h, token)).plants, [{ name: 'one' }]);
      });
    }
  });
});
